"""Packet-in and packet-out through the program's controller headers.
A frame from host 1 to a MAC that `dmac` sends to the CPU arrives as a
PacketIn with the frame as payload and the packet_in metadata
(ingress_port 1, the entry's reason); a PacketOut with packet_out
metadata egress_port 2 leaves by port 2 (host 2 receives the payload);
a backup controller receives no PacketIn."""

from common import Host, check, client, ether, main, primary


def run(args, info):
    h1, h2 = Host(args.host[0]), Host(args.host[1])
    c = primary(args, election=2)
    backup = client(args, election=1)
    check(backup.arbitrate().status.code == 6, "a second controller is backup")
    cpu_mac = bytes.fromhex("0200000000c1")
    entry = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": cpu_mac}, "RtIngress.to_cpu", {"reason": 5})
    c.write([("INSERT", entry)])

    frame = ether(cpu_mac, h1.mac, 0x88B5, b"to the controller")
    h1.send(frame)
    pin = c.next_message("packet")
    meta = info.metadata_values("packet_in", pin.metadata)
    check(pin.payload[: len(frame)] == frame, "the PacketIn's payload is the frame host 1 sent")
    check(meta.get("ingress_port") == 1, f"packet_in.ingress_port is 1 (got {meta})")
    check(meta.get("reason") == 5, f"packet_in.reason is the entry's 5 (got {meta})")
    try:
        backup.next_message("packet", timeout=1.0)
        check(False, "the backup controller receives no PacketIn")
    except TimeoutError:
        check(True, "the backup controller receives no PacketIn")

    h2.drain()
    out = ether(h2.mac, bytes.fromhex("0200000000c2"), 0x88B5, b"from the controller")
    c.packet_out(out, info.packet_metadata("packet_out", {"egress_port": 2, "pad": 0}))
    got = h2.receive(lambda f: f[:6] == h2.mac and f[6:12] == out[6:12], timeout=5)
    check(got is not None and got[: len(out)] == out, "a PacketOut to port 2 reaches host 2 unchanged")
    check(h1.receive(lambda f: f[6:12] == out[6:12], timeout=0.5) is None, "and not host 1")

    c.write([("DELETE", entry)])
    c.close()
    backup.close()


main(run)
