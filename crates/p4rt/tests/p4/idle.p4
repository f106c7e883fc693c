// Idle timeouts: table `flows` (support_timeout) forwards by source MAC
// to the port its entry names; table `plain` (no support_timeout) is
// applied after it. Everything else leaves by port 1.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t { ethernet_t eth; }

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action fwd(bit<9> port) {
        std.egress_spec = port;
    }

    table flows {
        key = { hdr.eth.src: exact; }
        actions = { fwd; NoAction; }
        default_action = NoAction();
        support_timeout = true;
    }

    table plain {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; NoAction; }
        default_action = NoAction();
    }

    apply {
        std.egress_spec = 1;
        flows.apply();
        plain.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
