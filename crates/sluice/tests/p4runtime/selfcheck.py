"""The client side alone (no switch): the official modules import, the
P4Info text `sluice p4 info` prints for rt.p4 parses into
p4.config.v1.P4Info with the tables, match kinds, digest and controller
headers the program declares, and entries encode by name."""

from common import check, main, rt

MF = rt.p4info_pb2.MatchField


def run(args, info):
    p4 = info.p4info
    kinds = {t.preamble.name: [MF.MatchType.Name(m.match_type) for m in t.match_fields] for t in p4.tables}
    check(
        kinds
        == {
            "RtIngress.smac": ["EXACT"],
            "RtIngress.dmac": ["EXACT"],
            "RtIngress.routes": ["LPM"],
            "RtIngress.acl": ["TERNARY", "TERNARY"],
            "RtIngress.ttl_class": ["RANGE"],
            "RtIngress.proto": ["OPTIONAL", "OPTIONAL"],
        },
        f"the P4Info's tables and match kinds: {kinds}",
    )
    check(all(t.preamble.id >> 24 == 0x02 for t in p4.tables), "table ids carry the 0x02 prefix")
    check([d.preamble.name for d in p4.digests] == ["learn_t"], "one digest, learn_t")
    heads = {h.preamble.name: [(m.name, m.bitwidth) for m in h.metadata] for h in p4.controller_packet_metadata}
    check(
        heads == {"packet_in": [("ingress_port", 9), ("reason", 7)], "packet_out": [("egress_port", 9), ("pad", 7)]},
        f"controller headers: {heads}",
    )
    e = info.table_entry("RtIngress.acl", {"hdr.ip.src": ("10.0.0.0", "255.0.0.0")}, "RtIngress.set_tag", {"tag": 7}, priority=3)
    check(e.match[0].ternary.value == b"\x0a\x00\x00\x00" and e.match[0].ternary.mask == b"\xff\x00\x00\x00", "a ternary key encodes")
    e = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:00:01"}, "RtIngress.forward", {"port": 0})
    check(e.match[0].exact.value == b"\x02\x00\x00\x00\x00\x01", "a MAC encodes in 6 bytes")
    check(e.action.action.params[0].value == b"\x00", "zero encodes as one byte (canonical)")
    try:
        info.table_entry("RtIngress.dmac", {"hdr.eth.dst": 1 << 48})
        check(False, "a 49-bit value for a 48-bit key is refused")
    except ValueError as err:
        check("48 bits" in str(err), f"a 49-bit value for a 48-bit key is refused ({err})")
    again = rt.text_format.Parse(rt.text_format.MessageToString(p4), rt.p4info_pb2.P4Info())
    check(again == p4, "the P4Info survives a text round trip")


main(run)
