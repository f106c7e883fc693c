"""Capabilities, GetForwardingPipelineConfig (the P4Info the switch runs
agrees with `sluice p4 info`), SetForwardingPipelineConfig with VERIFY
(a broken program is refused, nothing changes), VERIFY_AND_COMMIT (the
program's source as the device config; entries are cleared; the cookie
is kept) and the COOKIE_ONLY and P4INFO_AND_COOKIE reads."""

from common import check, expect_error, main, primary


def names_ids(p4info):
    return sorted(
        (kind, o.preamble.name, o.preamble.id)
        for kind in ("tables", "actions", "digests", "controller_packet_metadata")
        for o in getattr(p4info, kind)
    )


def run(args, info):
    c = primary(args)
    caps = c.capabilities()
    check(caps.p4runtime_api_version != "", f"Capabilities names an API version ({caps.p4runtime_api_version})")

    cfg = c.get_pipeline("ALL")
    check(names_ids(cfg.p4info) == names_ids(info.p4info), "the running P4Info has sluice p4 info's names and ids")
    check(cfg.p4info == info.p4info, "the running P4Info is sluice p4 info's, field for field")

    source = open(args.program, "rb").read()
    entry = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:02"}, "RtIngress.forward", {"port": 2})
    c.write([("INSERT", entry)])

    broken = source.replace(b"apply {", b"apply { this is not P4", 1)
    expect_error(lambda: c.set_pipeline(info.p4info, broken, "VERIFY"), "INVALID_ARGUMENT", "VERIFY refuses a program that does not compile")
    expect_error(
        lambda: c.set_pipeline(info.p4info, broken, "VERIFY_AND_COMMIT"),
        "INVALID_ARGUMENT",
        "VERIFY_AND_COMMIT refuses it too",
    )
    check(len(c.read([info.table_entry("RtIngress.dmac")])) == 1, "after the refusals the entry is still there")

    c.set_pipeline(info.p4info, source, "VERIFY")
    check(len(c.read([info.table_entry("RtIngress.dmac")])) == 1, "VERIFY of a good program changes nothing")

    c.set_pipeline(info.p4info, source, "VERIFY_AND_COMMIT", cookie=0x5A11CE)
    check(len(c.read([info.table_entry("RtIngress.dmac")])) == 0, "VERIFY_AND_COMMIT starts with empty tables")
    got = c.get_pipeline("COOKIE_ONLY")
    check(got.cookie.cookie == 0x5A11CE, f"COOKIE_ONLY returns the cookie (got {got.cookie.cookie:#x})")
    check(not got.HasField("p4info") and got.p4_device_config == b"", "and nothing else")
    got = c.get_pipeline("P4INFO_AND_COOKIE")
    check(got.p4info == info.p4info and got.p4_device_config == b"", "P4INFO_AND_COOKIE returns the P4Info without the device config")
    got = c.get_pipeline("ALL")
    check(got.p4_device_config == source, "ALL returns the device config that was set")
    c.close()


main(run)
