// A learning L2 switch (v1model) whose learning goes through packet-in
// instead of digests (examples/p4runtime/l2_learning.py --mode packet-in):
// a frame whose source MAC the `learned` table does not know goes to the
// controller (CPU port 255) with its ingress port in `packet_in`. The
// controller adds the MAC to `learned` and `forwarding` and sends the
// frame back as a packet-out whose `packet_out.ingress_port` names the
// port it first came in on; the switch then forwards it like any known
// frame. Known destinations go out of their port; unknown ones flood
// through multicast group 1, never back out of the port the frame came
// in on.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> ingress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t {
    packet_out_t po;
    packet_in_t pi;
    ethernet_t eth;
}

struct meta_t {
    bit<9> in_port;
}

parser L2Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: from_cpu;
            default: eth;
        }
    }
    state from_cpu {
        pkt.extract(hdr.po);
        transition eth;
    }
    state eth {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control L2Verify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Ingress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    action to_cpu() {
        std.egress_spec = CPU_PORT;
    }
    action known() { }

    table learned {
        key = { hdr.eth.src: exact; }
        actions = { to_cpu; known; }
        default_action = to_cpu();
        size = 131072;
    }

    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    action flood() {
        std.mcast_grp = 1;
    }
    action drop() {
        mark_to_drop(std);
    }

    table forwarding {
        key = { hdr.eth.dst: exact; }
        actions = { forward; flood; drop; }
        default_action = flood();
        size = 131072;
    }

    apply {
        if (std.parser_error != error.NoError) {
            drop();
            exit;
        }
        meta.in_port = std.ingress_port;
        if (hdr.po.isValid()) {
            // Sent back by the controller after learning.
            meta.in_port = hdr.po.ingress_port;
            hdr.po.setInvalid();
            forwarding.apply();
        } else if (learned.apply().hit) {
            forwarding.apply();
        }
    }
}

control L2Egress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    apply {
        if (std.egress_port == CPU_PORT) {
            hdr.pi.setValid();
            hdr.pi.ingress_port = meta.in_port;
        } else if (std.mcast_grp != 0 && std.egress_port == meta.in_port) {
            // Flooded copies skip the port the frame arrived on.
            mark_to_drop(std);
        }
    }
}

control L2Checksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.pi);
        pkt.emit(hdr.eth);
    }
}

V1Switch(L2Parser(), L2Verify(), L2Ingress(), L2Egress(), L2Checksum(),
         L2Deparser()) main;
