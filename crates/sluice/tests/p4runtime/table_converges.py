"""Waits (bounded) until table --table holds --want entries, reading as a
backup controller (election id 1) while another controller is primary;
prints the entries. For the examples' end-to-end tests."""

import argparse
import sys
import time

from common import HERE  # noqa: F401  (puts examples/p4runtime on the path)
import p4rt_client as rt

p = argparse.ArgumentParser()
p.add_argument("--addr", required=True)
p.add_argument("--device-id", type=int, default=0)
p.add_argument("--table", required=True)
p.add_argument("--want", type=int, required=True)
p.add_argument("--limit", type=float, default=20)
args = p.parse_args()

c = rt.Client(args.addr, device_id=args.device_id, election=1)
c.arbitrate()
info = rt.Info(c.get_pipeline("P4INFO_AND_COOKIE").p4info)
deadline = time.monotonic() + args.limit
while True:
    got = c.read([info.table_entry(args.table)])
    if len(got) == args.want:
        for e in got:
            t = e.table_entry
            print(" ".join(rt.decode(m.exact.value).to_bytes(6, "big").hex(":") for m in t.match),
                  "->", [rt.decode(x.value) for x in t.action.action.params])
        print("PASSED")
        sys.exit(0)
    if time.monotonic() > deadline:
        print(f"FAILED: {args.table} has {len(got)} entries, not {args.want}, after {args.limit} s")
        sys.exit(1)
    time.sleep(0.2)
