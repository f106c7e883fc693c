"""A direct meter and a direct counter with the official client, on
crates/p4rt/tests/p4/meter.p4 (RED packets are dropped). Two phases,
with traffic between them sent by the test (crates/p4rt/tests/python_client.rs):

--phase setup: inserts a `policer` entry for source 00:00:00:00:00:0a
  whose direct meter (meter_config in the TableEntry) allows 1 packet/s
  with bursts of 1, and zeroes the `colours` counter (CounterEntry
  MODIFY without an index).
(the test sends 5 frames from that source at one instant of the
  switch's clock: 1 GREEN, 4 RED; 1 leaves)
--phase check: the entry's direct counter reads 5 packets of 60 bytes
  (DirectCounterEntry, and TableEntry with counter_data), the meter's
  configuration reads back (DirectMeterEntry, and TableEntry with
  meter_config), the colour counter shows 1 GREEN and 4 RED; then a
  DirectMeterEntry without config resets the meter, and a
  DirectCounterEntry write sets the count."""

import sys

from common import check, main, primary, rt

PHASE = None
if "--phase" in sys.argv:
    i = sys.argv.index("--phase")
    PHASE = sys.argv[i + 1]
    del sys.argv[i:i + 2]

pb = rt.p4runtime_pb2
SRC = "00:00:00:00:00:0a"


def entity(**kw):
    e = pb.Entity()
    for k, v in kw.items():
        getattr(e, k).CopyFrom(v)
    return e


def run(args, info):
    c = primary(args)
    T = info.table_entry
    key = T("I.policer", {"hdr.eth.src": SRC})
    counter_id = next(x.preamble.id for x in info.p4info.counters if x.preamble.name == "I.colours")
    if PHASE == "setup":
        e = T("I.policer", {"hdr.eth.src": SRC}, "I.police", {"port": 2})
        e.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=1, pir=1, pburst=1))
        c.write([("INSERT", e)])
        check(len(c.read([key])) == 1, "the policer entry is installed with a 1 packet/s meter")
        c.write([("MODIFY", entity(counter_entry=pb.CounterEntry(counter_id=counter_id)))])
        cells = c.read([entity(counter_entry=pb.CounterEntry(counter_id=counter_id))])
        check([x.counter_entry.data.packet_count for x in cells] == [0, 0, 0], "a CounterEntry MODIFY without an index zeroes every colour cell")
        return
    if PHASE != "check":
        raise ValueError("give --phase setup or --phase check")
    dc = c.read([entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=key))])
    check(len(dc) == 1, "one DirectCounterEntry for the entry")
    d = dc[0].direct_counter_entry.data
    check((d.packet_count, d.byte_count) == (5, 300), f"its direct counter shows 5 packets, 300 bytes (got {d.packet_count}, {d.byte_count})")
    q = T("I.policer", {"hdr.eth.src": SRC})
    q.counter_data.SetInParent()
    q.meter_config.SetInParent()
    te = c.read([q])[0].table_entry
    check(te.counter_data.packet_count == 5, "a TableEntry read with counter_data set returns the count")
    check((te.meter_config.cir, te.meter_config.pburst) == (1, 1), "and with meter_config set the meter's configuration")
    dm = c.read([entity(direct_meter_entry=pb.DirectMeterEntry(table_entry=key))])
    check(len(dm) == 1 and dm[0].direct_meter_entry.config.pir == 1, "the DirectMeterEntry reads back pir 1")
    cells = c.read([entity(counter_entry=pb.CounterEntry(counter_id=counter_id))])
    by_colour = [x.counter_entry.data.packet_count for x in cells]
    check(by_colour == [1, 0, 4], f"colours: 1 GREEN, 0 YELLOW, 4 RED (dropped) (got {by_colour})")
    c.write([("MODIFY", entity(direct_meter_entry=pb.DirectMeterEntry(table_entry=key)))])
    dm = c.read([entity(direct_meter_entry=pb.DirectMeterEntry(table_entry=key))])
    check(not dm[0].direct_meter_entry.HasField("config"), "a DirectMeterEntry MODIFY without config resets the meter")
    c.write([("MODIFY", entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=key, data=pb.CounterData(packet_count=7, byte_count=9))))])
    d = c.read([entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=key))])[0].direct_counter_entry.data
    check((d.packet_count, d.byte_count) == (7, 9), "a DirectCounterEntry MODIFY sets the count")


if __name__ == "__main__":
    main(run)
