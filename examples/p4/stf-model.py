#!/usr/bin/env python3
"""Writes the STF tests of the example programs (router.stf, calc.stf,
l2switch.stf) from a plain Python model of what each program does, so the
expected frames do not come from sluice. Run it from this directory after
changing a case; the output is committed."""
import struct


def csum16(b):
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) | (b[i + 1] if i + 1 < len(b) else 0)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, ttl=64, proto=17, payload=b"", bad_checksum=False):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0x1234,
                    0x4000, ttl, proto, 0, bytes(src), bytes(dst))
    c = csum16(h) ^ (0x0101 if bad_checksum else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def eth(dst, src, ethertype, body):
    return bytes.fromhex(dst) + bytes.fromhex(src) + struct.pack("!H", ethertype) + body


class Stf:
    def __init__(self, header):
        self.lines = [header.rstrip()]

    def raw(self, text):
        self.lines.append(text.rstrip())

    def case(self, comment, port, frame, *expects):
        self.lines.append("")
        self.lines.append("# " + comment)
        for eport, eframe in expects:
            self.lines.append("expect %d %s $" % (eport, eframe.hex().upper()))
        self.lines.append("packet %d %s" % (port, frame.hex().upper()))

    def write(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def router():
    r1, h1 = "020000000001", "02000000aa01"
    nh2, r2, nh3, r3 = "02000000bb02", "020000000002", "02000000cc03", "020000000003"
    pay = bytes(range(16))
    src = [10, 0, 1, 1]
    s = Stf("""# STF test of router.p4, written by stf-model.py from a Python model.
#
# Routes: 10.0.2.0/24 via port 2, 10.0.2.9/32 via port 3 (more specific
# wins), 10.0.0.0/8 via port 3 (written with * nibbles).""")
    s.raw("add routes hdr.ip.dst:0x0a000200/24 forward(next_hop:0x%s, port_mac:0x%s, port:2)" % (nh2, r2))
    s.raw("add routes hdr.ip.dst:0x0a000209/32 forward(next_hop:0x%s, port_mac:0x%s, port:3)" % (nh3, r3))
    s.raw("add routes hdr.ip.dst:0x0a****** forward(next_hop:0x%s, port_mac:0x%s, port:3)" % (nh3, r3))
    s.case("10.0.2.2 takes the /24: MACs rewritten, TTL 64 -> 63, checksum recomputed", 1,
           eth(r1, h1, 0x800, ipv4(src, [10, 0, 2, 2], payload=pay)),
           (2, eth(nh2, r2, 0x800, ipv4(src, [10, 0, 2, 2], ttl=63, payload=pay))))
    s.case("10.0.2.9 takes the /32 over the /24", 1,
           eth(r1, h1, 0x800, ipv4(src, [10, 0, 2, 9], ttl=9, proto=6, payload=pay)),
           (3, eth(nh3, r3, 0x800, ipv4(src, [10, 0, 2, 9], ttl=8, proto=6, payload=pay))))
    s.case("10.200.0.1 takes the /8; TTL 2 still goes", 1,
           eth(r1, h1, 0x800, ipv4(src, [10, 200, 0, 1], ttl=2)),
           (3, eth(nh3, r3, 0x800, ipv4(src, [10, 200, 0, 1], ttl=1))))
    s.case("no route for 192.168.0.1: dropped", 1,
           eth(r1, h1, 0x800, ipv4(src, [192, 168, 0, 1])))
    s.case("TTL 1 would expire: dropped", 1, eth(r1, h1, 0x800, ipv4(src, [10, 0, 2, 2], ttl=1)))
    s.case("bad header checksum: dropped", 1,
           eth(r1, h1, 0x800, ipv4(src, [10, 0, 2, 2], bad_checksum=True)))
    s.case("ARP is not routed: dropped", 1, eth("ffffffffffff", h1, 0x806, bytes(28)))
    s.case("a frame too short for its IPv4 header: dropped", 1,
           eth(r1, h1, 0x800, ipv4(src, [10, 0, 2, 2])[:12]))
    s.write("router.stf")


def calc():
    a_mac, b_mac = "02000000000a", "02000000000b"

    def frame(op, a, b, result=0, dst=a_mac, src=b_mac, version=1, tail=b"tail"):
        return eth(dst, src, 0x1234, struct.pack("!BBBBIII", 0x50, 0x34, version, ord(op), a, b, result) + tail)

    s = Stf("# STF test of calc.p4, written by stf-model.py from a Python model.")
    m = 0xFFFFFFFF
    for op, a, b, r in [("+", 5, 7, 12), ("+", m, 2, 1), ("-", 3, 5, (3 - 5) & m),
                        ("&", 0xF0F0F0F0, 0xFF00FF00, 0xF000F000),
                        ("|", 0xF0F0F0F0, 0x0000FFFF, 0xF0F0FFFF),
                        ("^", 0xFFFF0000, 0x0F0F0F0F, 0xF0F00F0F)]:
        s.case("%d %s %d = %d, back out of port 4 with the MACs swapped" % (a, op, b, r), 4,
               frame(op, a, b), (4, frame(op, a, b, r, dst=b_mac, src=a_mac)))
    s.case("unknown operator '*': dropped", 4, frame("*", 1, 2))
    s.case("version 2 is not ours: dropped", 4, frame("+", 1, 2, version=2))
    s.case("not a calc frame: dropped", 4, eth(a_mac, b_mac, 0x800, bytes(20)))
    s.write("calc.stf")


def l2switch():
    h1, h2, h3 = "020000000101", "020000000102", "020000000103"
    s = Stf("""# STF test of l2switch.p4, written by stf-model.py from a Python model.
#
# Multicast group 1 floods to ports 1, 2 and 3; a flooded copy skips the
# port the frame came in on.""")
    s.raw("mc_mgrp_create 1")
    for port in (1, 2, 3):
        s.raw("mc_node_create 0 %d" % port)
    for node in (0, 1, 2):
        s.raw("mc_node_associate 1 %d" % node)
    f12 = eth(h2, h1, 0x88B5, b"one to two")
    s.case("unknown destination: flooded to ports 2 and 3", 1, f12, (2, f12), (3, f12))
    s.raw("")
    s.raw("# What the learning controller adds after the digests.")
    s.raw("add learned hdr.eth.src:0x%s known()" % h2)
    s.raw("add forwarding hdr.eth.dst:0x%s forward(port:2)" % h2)
    s.raw("add forwarding hdr.eth.dst:0x%s forward(port:1)" % h1)
    s.case("known destination: only port 2", 1, f12, (2, f12))
    f21 = eth(h1, h2, 0x88B5, b"two to one")
    s.case("and back: only port 1", 2, f21, (1, f21))
    f3b = eth("ffffffffffff", h3, 0x88B5, b"broadcast")
    s.case("broadcast from port 3: ports 1 and 2", 3, f3b, (1, f3b), (2, f3b))
    s.write("l2switch.stf")


if __name__ == "__main__":
    router()
    calc()
    l2switch()
