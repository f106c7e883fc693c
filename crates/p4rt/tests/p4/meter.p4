// Meters and direct counters over P4Runtime: table `policer` has a direct
// counter and a direct meter (packets) whose colour its action reads; an
// indexed meter (bytes) is run per packet at the index the ethertype's
// low two bits give; counter `colours` counts packets by the worse of
// the two colours; RED packets are dropped, the others leave by the
// port the policer entry names (port 1 on a miss).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t { ethernet_t eth; }

struct meta_t {
    bit<32> colour;
    bit<32> icolour;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    direct_counter(CounterType.packets_and_bytes) police_hits;
    direct_meter<bit<32>>(MeterType.packets) police_rate;
    meter(4, MeterType.bytes) port_rate;
    counter(3, CounterType.packets_and_bytes) colours;

    action police(bit<9> port) {
        police_rate.read(meta.colour);
        std.egress_spec = port;
    }

    table policer {
        key = { hdr.eth.src: exact; }
        actions = { police; NoAction; }
        default_action = NoAction();
        counters = police_hits;
        meters = police_rate;
    }

    apply {
        std.egress_spec = 1;
        meta.colour = 0;
        policer.apply();
        port_rate.execute_meter((bit<32>)hdr.eth.ethertype[1:0], meta.icolour);
        if (meta.icolour > meta.colour) {
            meta.colour = meta.icolour;
        }
        colours.count(meta.colour);
        if (meta.colour == 2) {
            mark_to_drop(std);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
