// Digests for the P4Runtime tests: a frame whose source MAC `learned`
// does not know sends a digest (source MAC, ingress port); every frame
// goes out of port 1.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t {
    ethernet_t eth;
}

struct learn_t {
    bit<48> mac;
    bit<9> port;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta,
          inout standard_metadata_t std) {
    action learn() {
        digest<learn_t>(1, { hdr.eth.src, std.ingress_port });
    }
    action known() { }

    table learned {
        key = { hdr.eth.src: exact; }
        actions = { learn; known; }
        default_action = learn();
    }

    apply {
        learned.apply();
        std.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta,
          inout standard_metadata_t std) {
    apply { }
}

control C(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
