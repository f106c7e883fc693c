#!/usr/bin/env python3
"""MACSAD-style L2 learning over P4Runtime.

`--mode digest` (default), for examples/p4/l2switch.p4: the switch's
`learned` table misses on an unknown source MAC and the program sends a
`learn_t` digest (source MAC, ingress port). This controller becomes
primary, makes multicast group 1 (every port: the program floods unknown
destinations through it), asks for the digests, and for each one adds
`learned` (known: no more digests for that MAC) and `forwarding` (frames
to that MAC go to its port), then acks the list.

    sluice p4 run examples/p4/l2switch.p4 --p4runtime 127.0.0.1:9559 \\
        --port afpacket:veth1=1 --port afpacket:veth2=2 --port afpacket:veth3=3 &
    /opt/sluice-venv/p4rt/bin/python examples/p4runtime/l2_learning.py \\
        --addr 127.0.0.1:9559 --ports 1,2,3

`--mode packet-in`, for examples/p4runtime/l2switch_cpu.p4 (run with
`--cpu-port 255`): the unknown source's frame itself comes as a PacketIn
(its ingress port in the packet_in header); the controller adds the same
two entries and sends the frame back as a PacketOut naming that ingress
port, and the switch forwards it as a known frame.

The P4Info comes from the switch (GetForwardingPipelineConfig), or with
`--set-pipeline PROG.p4` the controller first installs that program
(its P4Info from `sluice p4 info`). Runs until SIGTERM/SIGINT or
`--duration` seconds. Prints one line per learned station.
"""

import argparse
import signal
import sys
import time

import p4rt_client as rt


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--addr", default="127.0.0.1:9559")
    p.add_argument("--device-id", type=int, default=0, help="as `sluice p4 run --device-id` (default 0)")
    p.add_argument("--election", type=int, default=1)
    p.add_argument("--ports", default="1,2,3", help="the switch's ports, for the flood group")
    p.add_argument("--set-pipeline", metavar="PROG.p4")
    p.add_argument("--sluice", default="sluice", help="the sluice binary (for --set-pipeline)")
    p.add_argument("--mode", choices=["digest", "packet-in"], default="digest")
    p.add_argument("--duration", type=float, default=0, help="stop after this many seconds (0: run until signalled)")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    c = rt.Client(args.addr, device_id=args.device_id, election=args.election)
    st = c.arbitrate()
    if st.status.code != 0:
        sys.exit(f"l2_learning: not primary (another controller has election id {st.election_id.low})")
    if args.set_pipeline:
        p4info = rt.sluice_p4info(args.sluice, args.set_pipeline)
        c.set_pipeline(p4info, open(args.set_pipeline, "rb").read())
    else:
        p4info = c.get_pipeline("P4INFO_AND_COOKIE").p4info
    info = rt.Info(p4info)

    ports = [int(x) for x in args.ports.split(",")]
    c.write([("INSERT", rt.multicast_group(1, ports))])
    if args.mode == "digest":
        c.write([("INSERT", rt.digest_entry(info, "learn_t", max_list_size=16, max_timeout_ns=1_000_000, ack_timeout_ns=2_000_000_000))])
    print(f"l2_learning: primary on {args.addr}; flood group 1 = ports {ports}; learning from {args.mode}", flush=True)

    learned = {}

    def learn(mac, port):
        """Writes the two entries for a new station; True if it was new."""
        if mac in learned:
            return False
        learned[mac] = port
        try:
            c.write([
                ("INSERT", info.table_entry("L2Ingress.learned", {"hdr.eth.src": mac}, "L2Ingress.known")),
                ("INSERT", info.table_entry("L2Ingress.forwarding", {"hdr.eth.dst": mac}, "L2Ingress.forward", {"port": port})),
            ])
        except rt.P4rtError as e:
            # Entries written by an earlier run of this controller are fine.
            if any(code not in ("OK", "ALREADY_EXISTS") for code in e.canonical_codes()) or not e.errors:
                raise
        print(f"learned {mac:012x} on port {port}", flush=True)
        return True

    deadline = time.monotonic() + args.duration if args.duration else None
    while deadline is None or time.monotonic() < deadline:
        try:
            if args.mode == "digest":
                dl = c.next_message("digest", timeout=0.5)
                for d in dl.data:
                    learn(rt.decode(d.struct.members[0].bitstring), rt.decode(d.struct.members[1].bitstring))
                c.ack_digest(dl)
            else:
                pin = c.next_message("packet", timeout=0.5)
                port = info.metadata_values("packet_in", pin.metadata)["ingress_port"]
                learn(int.from_bytes(pin.payload[6:12], "big"), port)
                c.packet_out(pin.payload, info.packet_metadata("packet_out", {"ingress_port": port}))
        except TimeoutError:
            continue
    c.close()


if __name__ == "__main__":
    main()
