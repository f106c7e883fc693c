"""Errors for bad entries, each as the spec says (section 12.3): the Write
fails with UNKNOWN, also for a batch of one, and the status details carry
one p4.v1.Error per update, OK for the good ones. Wrong bit width
(OUT_OF_RANGE), unknown table and action ids (NOT_FOUND), an unknown
match field id (INVALID_ARGUMENT, the spec's "Match Format"), a duplicate insert
(ALREADY_EXISTS), MODIFY and DELETE of a missing entry (NOT_FOUND), a
ternary entry without priority, a priority on an exact table, a
masked-off value bit and an lpm value past its prefix (INVALID_ARGUMENT);
ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC leave nothing of a failed batch
(the other updates ABORTED); the tables are intact afterwards."""

from common import check, expect_error, main, primary, rt


def run(args, info):
    c = primary(args)
    T = info.table_entry
    good = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:01"}, "RtIngress.forward", {"port": 1})
    c.write([("INSERT", good)])

    def single(entry, kind="INSERT"):
        return lambda: c.write([(kind, entry)])

    # A 9-bit parameter given 10 bits.
    wide = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:02"}, "RtIngress.forward", {"port": 1})
    wide.action.action.params[0].value = (0x3FF).to_bytes(2, "big")
    expect_error(single(wide), "UNKNOWN", "a 9-bit parameter of 10 bits", ["OUT_OF_RANGE"])
    # A 48-bit key given 7 bytes.
    long_key = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:03"}, "RtIngress.forward", {"port": 1})
    long_key.match[0].exact.value = b"\x01" + bytes(6)
    expect_error(single(long_key), "UNKNOWN", "a 48-bit key of 49 bits", ["OUT_OF_RANGE"])
    # Unknown ids.
    bad_table = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:04"}, "RtIngress.forward", {"port": 1})
    bad_table.table_id = 0x02FFFFFF
    expect_error(single(bad_table), "UNKNOWN", "an unknown table id", ["NOT_FOUND"])
    bad_action = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:05"}, "RtIngress.forward", {"port": 1})
    bad_action.action.action.action_id = 0x01FFFFFF
    expect_error(single(bad_action), "UNKNOWN", "an unknown action id", ["NOT_FOUND"])
    bad_field = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:06"}, "RtIngress.forward", {"port": 1})
    bad_field.match[0].field_id = 99
    expect_error(single(bad_field), "UNKNOWN", "an unknown match field id", ["INVALID_ARGUMENT"])
    # An action the table does not list.
    foreign = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:07"}, "RtIngress.set_tag", {"tag": 1})
    expect_error(single(foreign), "UNKNOWN", "an action the table does not list", ["INVALID_ARGUMENT"])
    # Duplicate insert, modify and delete of a missing entry.
    expect_error(single(good), "UNKNOWN", "a duplicate insert", ["ALREADY_EXISTS"])
    missing = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:08"}, "RtIngress.forward", {"port": 2})
    expect_error(single(missing, "MODIFY"), "UNKNOWN", "MODIFY of a missing entry", ["NOT_FOUND"])
    expect_error(single(missing, "DELETE"), "UNKNOWN", "DELETE of a missing entry", ["NOT_FOUND"])
    # Match-kind rules.
    no_prio = T("RtIngress.acl", {"hdr.ip.src": ("10.0.0.0", "255.0.0.0")}, "RtIngress.nop")
    expect_error(single(no_prio), "UNKNOWN", "a ternary entry without a priority", ["INVALID_ARGUMENT"])
    masked = T("RtIngress.acl", {"hdr.ip.src": ("10.0.0.1", "255.0.0.0")}, "RtIngress.nop", priority=1)
    expect_error(single(masked), "UNKNOWN", "a ternary value with bits outside its mask", ["INVALID_ARGUMENT"])
    past = T("RtIngress.routes", {"hdr.ip.dst": ("10.1.2.3", 16)}, "RtIngress.nop")
    expect_error(single(past), "UNKNOWN", "an lpm value with bits past its prefix", ["INVALID_ARGUMENT"])
    prio_exact = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:09"}, "RtIngress.forward", {"port": 1}, priority=3)
    expect_error(single(prio_exact), "UNKNOWN", "a priority on an exact-only table", ["INVALID_ARGUMENT"])

    # A batch: per-update errors in order, the good updates applied.
    ok1 = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:0a"}, "RtIngress.forward", {"port": 1})
    ok2 = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:0b"}, "RtIngress.forward", {"port": 2})
    expect_error(
        lambda: c.write([("INSERT", ok1), ("INSERT", good), ("MODIFY", missing), ("INSERT", ok2)]),
        "UNKNOWN",
        "a batch of 4 with 2 bad updates (CONTINUE_ON_ERROR)",
        ["OK", "ALREADY_EXISTS", "NOT_FOUND", "OK"],
    )
    check(len(c.read([T("RtIngress.dmac")])) == 3, "the batch's 2 good inserts went in")

    # ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: nothing of a failed batch
    # stays (a modify, a delete and an insert before the failing update,
    # an insert after it), and every other update reports ABORTED.
    def dmac_state():
        return sorted(e.table_entry.SerializeToString(deterministic=True) for e in c.read([T("RtIngress.dmac")]))

    ok3 = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:0c"}, "RtIngress.forward", {"port": 1})
    ok4 = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:0d"}, "RtIngress.forward", {"port": 2})
    moved = T("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:cc:01"}, "RtIngress.forward", {"port": 2})
    before = dmac_state()
    for mode in ("ROLLBACK_ON_ERROR", "DATAPLANE_ATOMIC"):
        e = expect_error(
            lambda: c.write(
                [("MODIFY", moved), ("DELETE", ok1), ("INSERT", ok3), ("INSERT", moved), ("INSERT", ok4)],
                atomicity=mode,
            ),
            "UNKNOWN",
            f"a {mode} batch with a duplicate insert fourth",
            ["ABORTED", "ABORTED", "ABORTED", "ALREADY_EXISTS", "ABORTED"],
        )
        check("rolled back" in e.errors[0].message and "not attempted" in e.errors[4].message,
              f"{mode}: the ABORTED messages say rolled back / not attempted")
        check(dmac_state() == before, f"{mode}: the table reads back exactly as before the batch")
    c.write([("INSERT", ok3), ("DELETE", ok3)], atomicity="ROLLBACK_ON_ERROR")
    check(dmac_state() == before, "a good ROLLBACK_ON_ERROR batch goes in whole")

    # The tables are intact: exactly the three good entries.
    got = sorted(e.table_entry.SerializeToString(deterministic=True) for e in c.read([rt.p4runtime_pb2.TableEntry()]))
    check(got == sorted(x.SerializeToString(deterministic=True) for x in (good, ok1, ok2)), "after every refusal the tables hold the 3 good entries")
    for e in (good, ok1, ok2):
        c.write([("DELETE", e)])
    c.close()


main(run)
