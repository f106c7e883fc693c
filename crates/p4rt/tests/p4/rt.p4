// The P4Runtime server's test program: one table of each match kind,
// controller headers for packet-in/out (CPU port 255), a counter and a
// register.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t eth;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: cpu;
            default: eth;
        }
    }
    state cpu {
        pkt.extract(hdr.packet_out);
        transition eth;
    }
    state eth {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(4, CounterType.packets_and_bytes) hits;
    register<bit<32>>(8) cells;

    action drop() { mark_to_drop(std); }
    action fwd(bit<9> port) { std.egress_spec = port; }
    action to_cpu() {
        std.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = std.ingress_port;
        hdr.packet_in.pad = 0;
    }

    table l2 {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; to_cpu; drop; }
        default_action = drop();
    }
    table routes {
        key = { hdr.eth.src: lpm; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table acl {
        key = {
            hdr.eth.ethertype: ternary;
            hdr.eth.src: range;
            hdr.eth.dst: optional;
        }
        actions = { fwd; to_cpu; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            hits.count(1);
        } else {
            hits.count(0);
            if (!l2.apply().hit) {
                routes.apply();
            }
            acl.apply();
            cells.write(0, (bit<32>)std.ingress_port);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
