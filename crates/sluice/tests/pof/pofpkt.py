#!/usr/bin/python3
"""Traffic and an independent decoder for tests/pof_netns.rs (scapy).

Run with the Debian python (`/usr/bin/python3`, which has scapy), inside a
host's namespace (`ip netns exec NS /usr/bin/python3 pofpkt.py ...`):

  svc IFACE DST SRC SPEC...
                         build "service header" frames with scapy's own
                         layer (below), SPEC = ETHERTYPE:SERVICE:TAG:PAYLOAD
                         (numbers 0x hex or decimal, PAYLOAD hex), and send
                         them in order; prints each frame's hex
  sniff IFACE ETHERTYPE,...
                         capture frames of these ethertypes on IFACE:
                         prints "ready" once the capture socket is open,
                         captures until a line (or EOF) on stdin, then
                         prints one JSON object per frame and "done"
  tcp-server PORT        accept one TCP connection, echo until EOF
                         (prints "listening" when ready)
  tcp-client HOST PORT NBYTES
                         send NBYTES (a fixed pattern), read them back,
                         print "echoed N" if they came back intact

Every mode is bounded: sockets time out, a capture ends after 60 s even
if nobody writes to stdin.

The service header (ethertype 0x88b5, a protocol sluice was built without):

  byte 12..14  ethertype 0x88b5
  byte 14..16  service id (16 bits)
  byte 16..20  tag (32 bits)
  byte 20..    payload

The tunnel shim (ethertype 0x88b6, inserted by the switch at byte 12):

  byte 12..14  0x88b6
  byte 14..16  tunnel id (16 bits)
  byte 16..20  tunnel key (32 bits)
  byte 20..22  the original ethertype
  byte 22..    the original payload (an IPv4 header for IPv4)
"""

import json
import socket
import sys
import threading

from scapy.all import (ARP, IP, AsyncSniffer, Ether, Packet, Raw, ShortField,
                       XIntField, XShortField, bind_layers, conf,
                       sendp)
from scapy.utils import checksum

conf.verb = 0

SVC_TYPE = 0x88B5
SHIM_TYPE = 0x88B6


class Service(Packet):
    """The made-up service header of the custom-protocol test."""
    name = "Service"
    fields_desc = [ShortField("service", 0), XIntField("tag", 0)]


class Shim(Packet):
    """The tunnel shim: an id, a key, then the inner ethertype."""
    name = "Shim"
    fields_desc = [
        ShortField("tunnel", 0),
        XIntField("key", 0),
        XShortField("type", 0),
    ]


bind_layers(Ether, Service, type=SVC_TYPE)
bind_layers(Ether, Shim, type=SHIM_TYPE)
bind_layers(Shim, IP, type=0x0800)
bind_layers(Shim, ARP, type=0x0806)


def ipv4_header_ok(raw):
    """Whether an IPv4 header's checksum verifies (the header sums to 0xffff)."""
    ihl = (raw[0] & 0x0F) * 4
    return len(raw) >= ihl >= 20 and checksum(bytes(raw[:ihl])) == 0


def describe(frame):
    """What the decoder finds in one captured frame."""
    raw = bytes(frame)
    d = {"hex": raw.hex(), "len": len(raw), "type": frame[Ether].type}
    if Service in frame:
        s = frame[Service]
        d.update(service=s.service, tag=s.tag, payload=bytes(s.payload).hex())
    if Shim in frame:
        s = frame[Shim]
        d.update(tunnel=s.tunnel, key=s.key, inner_type=s.type)
    if IP in frame:
        ip = frame[IP]
        d.update(
            ip_src=ip.src,
            ip_dst=ip.dst,
            ttl=ip.ttl,
            proto=ip.proto,
            ip_header_ok=ipv4_header_ok(bytes(ip)),
        )
    if ARP in frame:
        d.update(arp_op=frame[ARP].op, arp_psrc=frame[ARP].psrc, arp_pdst=frame[ARP].pdst)
    return d


def cmd_svc(iface, dst, src, *specs):
    for spec in specs:
        ethertype, service, tag, payload_hex = spec.split(":")
        ethertype = int(ethertype, 0)
        hdr = Service(service=int(service, 0), tag=int(tag, 0))
        if ethertype != SVC_TYPE:
            # The same header under another ethertype (not bound to it).
            hdr = Raw(bytes(hdr))
        pkt = Ether(dst=dst, src=src, type=ethertype) / hdr / Raw(bytes.fromhex(payload_hex))
        sendp(pkt, iface=iface)
        print(bytes(pkt).hex(), flush=True)


def cmd_sniff(iface, types):
    wanted = {int(t, 0) for t in types.split(",")}
    ready = threading.Event()
    sniffer = AsyncSniffer(
        iface=iface,
        store=True,
        lfilter=lambda p: Ether in p and p[Ether].type in wanted,
        started_callback=ready.set,
    )
    sniffer.start()
    if not ready.wait(20):
        print("error: capture did not start", flush=True)
        sys.exit(2)
    print("ready", flush=True)
    # Wait for the test to say "stop" (or to go away), at most 60 s.
    done = threading.Event()

    def wait_stdin():
        sys.stdin.readline()
        done.set()

    threading.Thread(target=wait_stdin, daemon=True).start()
    done.wait(60)
    # Frames in flight when the test said stop are still taken.
    done.clear()
    done.wait(0.3)
    pkts = sniffer.stop() or []
    for p in pkts:
        print(json.dumps(describe(p)), flush=True)
    print("done", flush=True)


def pattern(n):
    return bytes((i * 7 + i // 251) & 0xFF for i in range(n))


def cmd_tcp_server(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", int(port)))
    srv.listen(1)
    srv.settimeout(30)
    print("listening", flush=True)
    conn, _ = srv.accept()
    conn.settimeout(15)
    total = 0
    while True:
        data = conn.recv(65536)
        if not data:
            break
        conn.sendall(data)
        total += len(data)
    conn.close()
    print("served %d" % total, flush=True)


def cmd_tcp_client(host, port, nbytes):
    n = int(nbytes)
    data = pattern(n)
    c = socket.create_connection((host, int(port)), timeout=15)
    c.settimeout(15)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    got = b""
    while len(got) < n:
        chunk = c.recv(65536)
        if not chunk:
            break
        got += chunk
    c.close()
    if got != data:
        print("mismatch: sent %d bytes, got %d back" % (n, len(got)), flush=True)
        sys.exit(1)
    print("echoed %d" % n, flush=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        sys.exit(2)
    cmd, args = argv[1], argv[2:]
    if cmd == "svc":
        cmd_svc(*args)
    elif cmd == "sniff":
        cmd_sniff(*args)
    elif cmd == "tcp-server":
        cmd_tcp_server(*args)
    elif cmd == "tcp-client":
        cmd_tcp_client(*args)
    else:
        print("unknown command %r" % cmd)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
