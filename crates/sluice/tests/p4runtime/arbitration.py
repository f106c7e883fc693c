"""Arbitration: two controllers, the higher election id is primary; the
other is told so (ALREADY_EXISTS) and its Write and
SetForwardingPipelineConfig are refused with PERMISSION_DENIED; a lower
id joins as backup; when the primary leaves, nobody is promoted (the
backups hear NOT_FOUND) until a controller sends an id at least as high
as the highest seen, as the spec's section 5 says."""

from common import check, client, expect_error, main, primary


def run(args, info):
    a = primary(args, election=10)
    b = client(args, election=20)
    st = b.arbitrate()
    check(st.status.code == 0, "the controller with the higher election id (20) becomes primary")
    check(st.election_id.low == 20, f"its answer names election id 20 as primary (got {st.election_id.low})")
    note = a.next_message("arbitration")
    check(note.status.code == 6, f"the old primary is told it is not primary any more (ALREADY_EXISTS, got {note.status.code})")
    check(note.election_id.low == 20, "and which election id is primary now")

    entry = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:01"}, "RtIngress.forward", {"port": 1})
    expect_error(lambda: a.write([("INSERT", entry)]), "PERMISSION_DENIED", "a backup controller's Write is refused")
    cfg = b.get_pipeline()
    expect_error(
        lambda: a.set_pipeline(cfg.p4info, cfg.p4_device_config),
        "PERMISSION_DENIED",
        "a backup controller's SetForwardingPipelineConfig is refused",
    )
    b.write([("INSERT", entry)])
    check(len(a.read([info.table_entry("RtIngress.dmac")])) == 1, "the primary's Write went in; a backup may Read it")

    # A third controller with a lower id than the primary: a backup at once.
    c = client(args, election=5)
    st = c.arbitrate()
    check(st.status.code == 6, f"a lower election id (5) joins as backup (ALREADY_EXISTS, got {st.status.code})")

    # The primary leaves: nobody is promoted (spec 5.3: the highest id ever
    # seen, 20, stays the bar); the backups are told there is no primary.
    b.close()
    note = a.next_message("arbitration")
    check(note.status.code == 5, f"after the primary leaves, the backup is told there is none (NOT_FOUND, got {note.status.code})")
    check(note.election_id.low == 20, f"naming the highest election id seen, 20 (got {note.election_id.low})")
    expect_error(lambda: a.write([("DELETE", entry)]), "PERMISSION_DENIED", "without a primary, a backup still cannot write")
    a.election = 21
    st = a.arbitrate()
    check(st.status.code == 0 and st.election_id.low == 21, "election id 21 (above the highest seen) makes it primary")
    a.write([("DELETE", entry)])
    check(len(a.read([info.table_entry("RtIngress.dmac")])) == 0, "the new primary can write (delete)")
    a.close()
    c.close()


main(run)
