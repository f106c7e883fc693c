#!/usr/bin/env python3
"""Drives examples/p4/router.p4 entirely over P4Runtime: installs the
program (SetForwardingPipelineConfig with the P4 source and the P4Info
`sluice p4 info` prints), then writes one `routes` entry (lpm on the
destination, action forward(next hop MAC, port MAC, port)) per --route,
reads the table back and prints it.

    sluice p4 run examples/p4/router.p4 --p4runtime 127.0.0.1:9559 \\
        --port afpacket:veth1=1 --port afpacket:veth2=2 &
    /opt/sluice-venv/p4rt/bin/python examples/p4runtime/router.py --addr 127.0.0.1:9559 \\
        --route 10.0.1.0/24,02:00:00:00:00:01,02:00:00:00:aa:01,1 \\
        --route 10.0.2.0/24,02:00:00:00:00:02,02:00:00:00:aa:02,2

Hosts then need the router's port MAC as their gateway's neighbour (the
program routes IPv4 only and answers no ARP).
"""

import argparse
import os
import sys

import p4rt_client as rt

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--addr", default="127.0.0.1:9559")
    p.add_argument("--device-id", type=int, default=0, help="as `sluice p4 run --device-id` (default 0)")
    p.add_argument("--election", type=int, default=1)
    p.add_argument("--program", default=os.path.join(HERE, "..", "p4", "router.p4"))
    p.add_argument("--sluice", default="sluice", help="the sluice binary (for the P4Info)")
    p.add_argument("--p4info", metavar="FILE", help="the P4Info as text protobuf instead of `sluice p4 info`")
    p.add_argument("--route", action="append", default=[], metavar="PREFIX/LEN,NEXTHOP_MAC,PORT_MAC,PORT")
    args = p.parse_args()

    c = rt.Client(args.addr, device_id=args.device_id, election=args.election)
    st = c.arbitrate()
    if st.status.code != 0:
        sys.exit(f"router: not primary (another controller has election id {st.election_id.low})")
    if args.p4info:
        with open(args.p4info) as f:
            p4info = rt.text_format.Parse(f.read(), rt.p4info_pb2.P4Info())
    else:
        p4info = rt.sluice_p4info(args.sluice, args.program)
    c.set_pipeline(p4info, open(args.program, "rb").read())
    info = rt.Info(p4info)

    updates = []
    for r in args.route:
        try:
            prefix, next_hop, port_mac, port = r.split(",")
            addr, plen = prefix.split("/")
        except ValueError:
            sys.exit(f"router: bad --route {r!r} (want PREFIX/LEN,NEXTHOP_MAC,PORT_MAC,PORT)")
        updates.append((
            "INSERT",
            info.table_entry(
                "RouterIngress.routes",
                {"hdr.ip.dst": (addr, int(plen))},
                "RouterIngress.forward",
                {"next_hop": next_hop, "port_mac": port_mac, "port": int(port)},
            ),
        ))
    if updates:
        c.write(updates)
    for e in c.read([info.table_entry("RouterIngress.routes")]):
        m = e.table_entry.match[0].lpm
        dst = ".".join(str(b) for b in rt.decode(m.value).to_bytes(4, "big"))
        params = [rt.decode(x.value) for x in e.table_entry.action.action.params]
        print(f"route {dst}/{m.prefix_len} -> next hop {params[0]:012x} via port {params[2]} (source {params[1]:012x})")
    c.close()


if __name__ == "__main__":
    main()
