"""An L2-learning os-ken application for OpenFlow 1.3 (simple_switch_13 style).

Used by crates/sluice/tests/osken_app.rs: osken-manager runs this file and
sluice connects to it. Debian's python3-os-ken does not ship the example
`simple_switch_13` application, so the test carries its own, written for it.

Behaviour:
- on SWITCH_FEATURES: install a table-miss flow (priority 0, match all,
  output to the controller without buffering) and log a line the test
  looks for;
- on PACKET_IN: learn (datapath, eth_src) -> in_port; if eth_dst is known,
  install a priority-1 flow (in_port, eth_src, eth_dst) -> that port and
  send the packet there, otherwise flood it with PACKET_OUT.
"""

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER
from os_ken.controller.handler import set_ev_cls
from os_ken.lib.packet import ether_types, ethernet, packet
from os_ken.ofproto import ofproto_v1_3


class L2Learning13(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # dpid -> {mac: port}
        self.ports_by_mac = {}

    @staticmethod
    def _add_flow(dp, priority, match, actions, buffer_id=None):
        ofp = dp.ofproto
        parser = dp.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        extra = {}
        if buffer_id is not None and buffer_id != ofp.OFP_NO_BUFFER:
            extra["buffer_id"] = buffer_id
        dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=priority,
                                      match=match, instructions=inst, **extra))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev):
        dp = ev.msg.datapath
        ofp = dp.ofproto
        parser = dp.ofproto_parser
        miss = [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
        self._add_flow(dp, 0, parser.OFPMatch(), miss)
        self.logger.info("L2LEARN switch connected dpid=%016x", dp.id)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp = dp.ofproto
        parser = dp.ofproto_parser
        in_port = msg.match["in_port"]

        eths = packet.Packet(msg.data).get_protocols(ethernet.ethernet)
        if not eths:
            return
        eth = eths[0]
        if eth.ethertype == ether_types.ETH_TYPE_LLDP:
            return

        table = self.ports_by_mac.setdefault(dp.id, {})
        table[eth.src] = in_port
        out_port = table.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]
        self.logger.info("L2LEARN packet-in dpid=%016x %s -> %s in_port=%d out=%d",
                         dp.id, eth.src, eth.dst, in_port, out_port)

        if out_port != ofp.OFPP_FLOOD:
            match = parser.OFPMatch(in_port=in_port, eth_dst=eth.dst,
                                    eth_src=eth.src)
            if msg.buffer_id != ofp.OFP_NO_BUFFER:
                # The flow-mod releases the buffered packet through the flow.
                self._add_flow(dp, 1, match, actions, msg.buffer_id)
                return
            self._add_flow(dp, 1, match, actions)

        data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id,
                                        in_port=in_port, actions=actions,
                                        data=data))
