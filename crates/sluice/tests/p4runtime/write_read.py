"""Every Write and Read path for table entries: an entry in a table of
each match kind (exact, lpm, ternary with priorities, range, optional,
and a don't-care optional field left out), read back field for field by
table and by a wildcard over all tables; MODIFY of an entry's action;
MODIFY of a table's default action and its read-back with
is_default_action; a read matching one entry; multicast groups; and
DELETE."""

from common import check, main, primary, rt


def key(e):
    return (e.table_id, e.SerializeToString(deterministic=True))


def run(args, info):
    c = primary(args)
    T = info.table_entry
    entries = [
        T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:01"}, "RtIngress.forward", {"port": 1}),
        T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:02"}, "RtIngress.to_cpu", {"reason": 3}),
        T("RtIngress.routes", {"hdr.ip.dst": ("10.1.0.0", 16)}, "RtIngress.route", {"dst_mac": "02:00:00:00:bb:01", "port": 2}),
        T("RtIngress.routes", {"hdr.ip.dst": ("10.1.2.0", 24)}, "RtIngress.nop"),
        T("RtIngress.acl", {"hdr.ip.src": ("10.0.0.0", "255.0.0.0"), "hdr.ip.protocol": (6, 0xFF)}, "RtIngress.set_tag", {"tag": 7}, priority=10),
        T("RtIngress.acl", {"hdr.ip.src": ("10.0.0.0", "255.0.0.0")}, "RtIngress.drop", priority=5),
        T("RtIngress.ttl_class", {"hdr.ip.ttl": (1, 16)}, "RtIngress.set_tag", {"tag": 1}, priority=1),
        T("RtIngress.ttl_class", {"hdr.ip.ttl": (17, 255)}, "RtIngress.set_tag", {"tag": 2}, priority=1),
        T("RtIngress.proto", {"hdr.ip.protocol": 17, "hdr.ip.tos": 0}, "RtIngress.set_tag", {"tag": 3}, priority=2),
        T("RtIngress.proto", {"hdr.ip.protocol": 6}, "RtIngress.set_tag", {"tag": 4}, priority=1),
    ]
    c.write([("INSERT", e) for e in entries])
    print(f"inserted {len(entries)} entries in 5 tables", flush=True)

    # Read back by each table.
    for table in ("RtIngress.dmac", "RtIngress.routes", "RtIngress.acl", "RtIngress.ttl_class", "RtIngress.proto"):
        tid = info.table(table).preamble.id
        want = sorted(key(e) for e in entries if e.table_id == tid)
        got = sorted(key(e.table_entry) for e in c.read([T(table)]))
        check(got == want, f"{table}: read returns the {len(want)} entries as written")

    # Wildcard over every table (table_id 0).
    got = sorted(key(e.table_entry) for e in c.read([rt.p4runtime_pb2.TableEntry()]))
    check(got == sorted(key(e) for e in entries), "a wildcard read over all tables returns every entry")

    # A read naming one entry's match returns that entry only.
    one = c.read([T("RtIngress.routes", {"hdr.ip.dst": ("10.1.2.0", 24)})])
    check(len(one) == 1 and key(one[0].table_entry) == key(entries[3]), "a read with a full match returns that entry")

    # MODIFY an entry's action.
    changed = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:01"}, "RtIngress.forward", {"port": 2})
    c.write([("MODIFY", changed)])
    got = [e.table_entry for e in c.read([T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:01"})])]
    check(len(got) == 1 and got[0].action.action.params[0].value == b"\x02", "MODIFY changed the entry's parameter")

    # The default action: read, modify, read again.
    default = T("RtIngress.dmac", default=True)
    got = [e.table_entry for e in c.read([default])]
    drop_id = info.action("RtIngress.drop").preamble.id
    check(len(got) == 1 and got[0].is_default_action and got[0].action.action.action_id == drop_id, "the default entry reads as drop()")
    c.write([("MODIFY", T("RtIngress.dmac", action="RtIngress.to_cpu", params={"reason": 9}, default=True))])
    got = [e.table_entry for e in c.read([default])]
    cpu_id = info.action("RtIngress.to_cpu").preamble.id
    check(
        len(got) == 1 and got[0].action.action.action_id == cpu_id and got[0].action.action.params[0].value == b"\x09",
        "MODIFY of the default action reads back as to_cpu(9)",
    )
    check(all(not e.table_entry.is_default_action for e in c.read([T("RtIngress.dmac")])), "a table read does not return the default entry")
    c.write([("MODIFY", T("RtIngress.dmac", action="RtIngress.drop", default=True))])

    # Multicast group: insert, read, modify, delete.
    c.write([("INSERT", rt.multicast_group(1, [1, 2]))])
    pre = rt.p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 1
    got = c.read([pre])
    check(len(got) == 1 and len(got[0].packet_replication_engine_entry.multicast_group_entry.replicas) == 2, "multicast group 1 reads back with 2 replicas")
    c.write([("MODIFY", rt.multicast_group(1, [1, 2, 255]))])
    got = c.read([pre])
    check(len(got[0].packet_replication_engine_entry.multicast_group_entry.replicas) == 3, "MODIFY of the group adds a replica")
    c.write([("DELETE", rt.multicast_group(1, []))])
    check(c.read([pre]) == [], "the deleted group is gone")

    # DELETE everything (the match identifies an entry; no action needed).
    deletes = []
    for e in entries:
        d = rt.p4runtime_pb2.TableEntry()
        d.CopyFrom(e)
        d.ClearField("action")
        deletes.append(("DELETE", d))
    c.write(deletes)
    check(c.read([rt.p4runtime_pb2.TableEntry()]) == [], "after DELETE a wildcard read is empty")
    c.close()


main(run)
