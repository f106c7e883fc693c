"""An os-ken application that runs sluice's Dapper filter program.

Used by crates/sluice/tests/filterprog_netns.rs: osken-manager runs this
file and `sluice run` connects to it. The wire formats are sluice's
experimenter extension (docs/EXPERIMENTER.md, "Filter programs"); os-ken
knows nothing of them, so the app builds the bodies itself with `struct`.

Environment: SLUICE_DAPPER_OBJ is the compiled examples/bpf/dapper.c
object, SLUICE_DAPPER_PROG the program id to load it under.

Behaviour:
- on SWITCH_FEATURES: send the object as LOAD_FILTER_PROG fragments;
  install priority-1 flows port 1 <-> port 2 and, above them, a TCP rule
  per direction whose match names the program (the experimenter OXM
  filter_prog) and whose actions are send_maps(PROG, "stats") and the
  output; then a barrier, whose reply logs "DAPPER installed";
- on each MAPS_REPORT: log the report and one "DAPPER reported conn ..."
  line per map entry, then ask for the whole map with DUMP_MAP;
- on each DUMP_MAP reply: log one "DAPPER dumped conn ..." line per entry;
- on an error from the switch: log "DAPPER error ...".
"""

import os
import socket
import struct

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER
from os_ken.controller.handler import set_ev_cls
from os_ken.ofproto import ofproto_v1_3

SLIC = 0x534C4943
LOAD_FILTER_PROG = 2
DUMP_MAP = 5
MAPS_REPORT = 6
FILTER_PROG_FIELD = 16
SEND_MAPS = 16
MORE = 1
FRAGMENT = 60000
COOKIE = 0xDA99E4
MAP = b"stats"


def pad8(n):
    return (n + 7) // 8 * 8


def name_field(name):
    return name + b"\0" * (pad8(len(name)) - len(name))


def oxm(field, value, cls=0x8000):
    return struct.pack("!I", cls << 16 | field << 9 | len(value)) + value


def flow_mod(xid, priority, in_port, out_port, prog):
    """A FLOW_MOD ADD: in_port,tcp,filter_prog=PROG ->
    send_maps:PROG:stats,output:OUT_PORT (raw bytes)."""
    fields = (oxm(0, struct.pack("!I", in_port))
              + oxm(5, struct.pack("!H", 0x0800))
              + oxm(10, struct.pack("!B", 6))
              + oxm(FILTER_PROG_FIELD, struct.pack("!II", SLIC, prog), 0xFFFF))
    match = struct.pack("!HH", 1, 4 + len(fields)) + fields
    match += b"\0" * (pad8(len(match)) - len(match))
    names = struct.pack("!B", len(MAP)) + MAP
    send_maps = struct.pack("!HHIHHI", 0xFFFF, pad8(16 + len(names)), SLIC,
                            SEND_MAPS, 1, prog) + names
    send_maps += b"\0" * (pad8(len(send_maps)) - len(send_maps))
    output = struct.pack("!HHIH6x", 0, 16, out_port, 0xFFFF)
    actions = send_maps + output
    inst = struct.pack("!HH4x", 4, 8 + len(actions)) + actions
    body = struct.pack("!QQBBHHHIIIH2x", COOKIE, 0, 0, 0, 0, 0, priority,
                       0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    msg = body + match + inst
    return struct.pack("!BBHI", 4, 14, 8 + len(msg), xid) + msg


def map_blocks(buf, n):
    """Parses N map blocks: [(name, key_size, value_size, entries)]."""
    out, at = [], 0
    for _ in range(n):
        name_len, key_size, value_size, count = struct.unpack_from(
            "!B1xHH2xI4x", buf, at)
        name = bytes(buf[at + 16:at + 16 + name_len])
        at += 16 + pad8(name_len)
        size = key_size + value_size
        entries = [(bytes(buf[at + i * size:at + i * size + key_size]),
                    bytes(buf[at + i * size + key_size:at + (i + 1) * size]))
                   for i in range(count)]
        at += pad8(count * size)
        out.append((name, key_size, value_size, entries))
    return out


def conn_line(key, value):
    """struct flow5 -> struct tcp_stats, as one log line's tail."""
    saddr, daddr = socket.inet_ntoa(key[0:4]), socket.inet_ntoa(key[4:8])
    sport, dport = struct.unpack_from("!HH", key, 8)
    packets, nbytes, retrans, zero_win, max_win, _next, flags, _pad = \
        struct.unpack("<QQIIIIII", value)
    return ("conn %s:%d>%s:%d packets=%d bytes=%d retrans=%d zero_win=%d "
            "max_win=%d flags=0x%02x" % (saddr, sport, daddr, dport, packets,
                                        nbytes, retrans, zero_win, max_win,
                                        flags))


class Dapper(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.obj = open(os.environ["SLUICE_DAPPER_OBJ"], "rb").read()
        self.prog = int(os.environ["SLUICE_DAPPER_PROG"])
        self.barrier_xid = None

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev):
        dp = ev.msg.datapath
        ofp = dp.ofproto
        parser = dp.ofproto_parser
        total = len(self.obj)
        for off in range(0, total, FRAGMENT):
            piece = self.obj[off:off + FRAGMENT]
            flags = MORE if off + len(piece) < total else 0
            body = struct.pack("!IH2xII", self.prog, flags, off, total) + piece
            dp.send_msg(parser.OFPExperimenter(dp, SLIC, LOAD_FILTER_PROG,
                                               body))
        for in_port, out_port in ((1, 2), (2, 1)):
            match = parser.OFPMatch(in_port=in_port)
            act = [parser.OFPActionOutput(out_port)]
            inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, act)]
            dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=1,
                                          match=match, instructions=inst))
            dp.send(flow_mod(0xDA900000 + in_port, 10, in_port, out_port,
                             self.prog))
        barrier = parser.OFPBarrierRequest(dp)
        dp.send_msg(barrier)
        self.barrier_xid = barrier.xid
        self.logger.info("DAPPER loading prog=%d (%d bytes)", self.prog, total)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def on_barrier(self, ev):
        if ev.msg.xid == self.barrier_xid:
            self.logger.info("DAPPER installed prog=%d", self.prog)

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER,
                                             MAIN_DISPATCHER])
    def on_error(self, ev):
        m = ev.msg
        self.logger.info("DAPPER error type=0x%x code=0x%x data=%s",
                         m.type, m.code, bytes(m.data).hex())

    @set_ev_cls(ofp_event.EventOFPExperimenter, MAIN_DISPATCHER)
    def on_report(self, ev):
        m = ev.msg
        if m.experimenter != SLIC or m.exp_type != MAPS_REPORT:
            return
        data = bytes(m.data)
        prog, table, flags, n_maps, cookie = struct.unpack_from("!IBBHQ",
                                                                data, 0)
        for name, _k, _v, entries in map_blocks(data[16:], n_maps):
            self.logger.info("DAPPER report prog=%d table=%d cookie=0x%x "
                             "more=%d map=%s entries=%d", prog, table, cookie,
                             flags & MORE, name.decode(), len(entries))
            for key, value in entries:
                self.logger.info("DAPPER reported %s ", conn_line(key, value))
        dp = m.datapath
        parser = dp.ofproto_parser
        body = struct.pack("!IB3x", self.prog, len(MAP)) + name_field(MAP)
        dp.send_msg(parser.OFPExperimenterStatsRequest(dp, 0, SLIC, DUMP_MAP,
                                                       body))

    @set_ev_cls(ofp_event.EventOFPExperimenterStatsReply, MAIN_DISPATCHER)
    def on_dump(self, ev):
        b = ev.msg.body
        if b.experimenter != SLIC or b.exp_type != DUMP_MAP:
            return
        data = bytes(b.data)
        (prog,) = struct.unpack_from("!I", data, 0)
        for name, _k, _v, entries in map_blocks(data[8:], 1):
            self.logger.info("DAPPER dump prog=%d map=%s entries=%d", prog,
                             name.decode(), len(entries))
            for key, value in entries:
                self.logger.info("DAPPER dumped %s ", conn_line(key, value))
