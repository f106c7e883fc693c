// A learning L2 switch (v1model), MACSAD's L2 use case: a frame whose
// source MAC the `learned` table does not know sends a digest
// (source MAC, ingress port) to the controller, which adds the MAC to
// `learned` and to `forwarding`. Known destinations go out of their
// port; unknown ones flood through multicast group 1, which the
// controller sets to every port; a flooded copy never goes back out of
// the port the frame came in on.
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

parser L2Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control L2Verify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Ingress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    action learn() {
        digest<learn_t>(1, { hdr.eth.src, std.ingress_port });
    }
    action known() { }

    table learned {
        key = { hdr.eth.src: exact; }
        actions = { learn; known; }
        default_action = learn();
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
        learned.apply();
        forwarding.apply();
    }
}

control L2Egress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    apply {
        // Flooded copies skip the port the frame arrived on.
        if (std.mcast_grp != 0 && std.egress_port == std.ingress_port) {
            mark_to_drop(std);
        }
    }
}

control L2Checksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(L2Parser(), L2Verify(), L2Ingress(), L2Egress(), L2Checksum(),
         L2Deparser()) main;
