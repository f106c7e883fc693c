"""Idle timeouts with the official client: the switch runs
crates/p4rt/tests/p4/idle.p4 (set with VERIFY_AND_COMMIT), whose table
I.flows has `support_timeout = true` (NOTIFY_CONTROL in the P4Info). Two
entries get a 300 ms TTL; the controller sends packet-outs (which enter
the pipeline at the CPU port) that hit one of them every 20 ms. The
primary gets an IdleTimeoutNotification naming only the other; a Read
with time_since_last_hit shows the unhit entry idle for at least its TTL
and the hit one for less. Waits are bounded (250 rounds of 20 ms)."""

import os

from common import check, ether, main, primary, rt

HERE = os.path.dirname(os.path.abspath(__file__))
IDLE_P4 = os.path.join(HERE, "..", "..", "..", "p4rt", "tests", "p4", "idle.p4")
TTL = 300_000_000
HOT, COLD = "00:00:00:00:00:0a", "00:00:00:00:00:0b"


def entry(info, src):
    e = info.table_entry("I.flows", {"hdr.eth.src": src}, "I.fwd", {"port": 2})
    e.idle_timeout_ns = TTL
    return e


def run(args, _rt_info):
    c = primary(args)
    info = rt.Info(rt.sluice_p4info(args.sluice, IDLE_P4))
    notify = rt.p4info_pb2.Table.IdleTimeoutBehavior.Value("NOTIFY_CONTROL")
    check(info.table("I.flows").idle_timeout_behavior == notify, "I.flows is NOTIFY_CONTROL in the P4Info")
    c.set_pipeline(info.p4info, open(IDLE_P4, "rb").read(), "VERIFY_AND_COMMIT")
    c.write([("INSERT", entry(info, HOT)), ("INSERT", entry(info, COLD))])
    frame = ether(bytes(6), bytes.fromhex(HOT.replace(":", "")), 0x88B5)
    got = None
    for _ in range(250):
        c.packet_out(frame, [])
        try:
            got = c.next_message("idle_timeout_notification", timeout=0.02)
            break
        except TimeoutError:
            pass
    check(got is not None, "an IdleTimeoutNotification arrives")
    srcs = [rt.decode(e.match[0].exact.value) for e in got.table_entry]
    check(srcs == [0x0B], f"it names only the entry nobody hits (got {srcs})")
    check(got.table_entry[0].idle_timeout_ns == TTL and got.timestamp > 0, "with its TTL and a timestamp")

    q = info.table_entry("I.flows")
    q.time_since_last_hit.SetInParent()
    idle = {}
    for e in c.read([q]):
        te = e.table_entry
        idle[rt.decode(te.match[0].exact.value)] = te.time_since_last_hit.elapsed_ns
    check(sorted(idle) == [0x0A, 0x0B], f"both entries are still installed ({idle})")
    check(idle[0x0B] >= TTL, f"the unhit entry has been idle at least its TTL ({idle[0x0B]} ns)")
    check(idle[0x0A] < idle[0x0B], f"the hit entry less ({idle[0x0A]} ns)")
    c.close()


main(run)
