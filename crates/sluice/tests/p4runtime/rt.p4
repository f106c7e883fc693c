// The program crates/sluice/tests/p4runtime_python.rs runs under
// `sluice p4 run --p4runtime` for the official Python client's scripts:
// a table for each match kind (exact, lpm, ternary with priorities, range,
// optional), a digest, and packet-in/packet-out through controller
// headers on CPU port 255.
//
// Port 1 and 2 are hosts. A frame from the CPU (packet-out) carries
// `packet_out` and leaves by its egress_port. Other frames: an unknown
// source MAC sends a digest (`learn`); `dmac` (exact on the destination)
// forwards, drops or sends to the CPU with `packet_in` (ingress port and
// a reason); IPv4 frames then go through `routes` (lpm), `acl`
// (ternary), `ttl_class` (range) and `proto` (optional), which only
// write `tag`, so the scripts can fill and read them freely.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> reason;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> tos;
    bit<16> total_len;
    bit<16> id;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    packet_out_t po;
    packet_in_t pi;
    ethernet_t eth;
    ipv4_t ip;
}

struct learn_t {
    bit<48> mac;
    bit<9> port;
}

struct meta_t {
    bit<8> tag;
    bit<7> reason;
}

parser RtParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
        transition select(hdr.eth.ethertype) {
            0x0800: ip;
            default: accept;
        }
    }
    state ip {
        pkt.extract(hdr.ip);
        transition accept;
    }
}

control RtVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RtIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    action drop() { mark_to_drop(std); }
    action nop() { }
    action learn() { digest<learn_t>(1, { hdr.eth.src, std.ingress_port }); }
    action forward(bit<9> port) { std.egress_spec = port; }
    action to_cpu(bit<7> reason) {
        std.egress_spec = CPU_PORT;
        meta.reason = reason;
    }
    action set_tag(bit<8> tag) { meta.tag = tag; }
    action route(bit<48> dst_mac, bit<9> port) {
        hdr.eth.dst = dst_mac;
        std.egress_spec = port;
    }

    table smac {
        key = { hdr.eth.src: exact; }
        actions = { learn; nop; }
        default_action = learn();
        size = 1024;
    }
    table dmac {
        key = { hdr.eth.dst: exact; }
        actions = { forward; to_cpu; drop; }
        default_action = drop();
        size = 1024;
    }
    table routes {
        key = { hdr.ip.dst: lpm; }
        actions = { route; nop; }
        default_action = nop();
        size = 1024;
    }
    table acl {
        key = {
            hdr.ip.src: ternary;
            hdr.ip.protocol: ternary;
        }
        actions = { set_tag; drop; nop; }
        default_action = nop();
        size = 1024;
    }
    table ttl_class {
        key = { hdr.ip.ttl: range; }
        actions = { set_tag; nop; }
        default_action = nop();
        size = 1024;
    }
    table proto {
        key = {
            hdr.ip.protocol: optional;
            hdr.ip.tos: optional;
        }
        actions = { set_tag; nop; }
        default_action = nop();
        size = 1024;
    }

    apply {
        if (hdr.po.isValid()) {
            std.egress_spec = hdr.po.egress_port;
            hdr.po.setInvalid();
            exit;
        }
        smac.apply();
        dmac.apply();
        if (hdr.ip.isValid()) {
            routes.apply();
            acl.apply();
            ttl_class.apply();
            proto.apply();
        }
    }
}

control RtEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    apply {
        if (std.egress_port == CPU_PORT) {
            hdr.pi.setValid();
            hdr.pi.ingress_port = std.ingress_port;
            hdr.pi.reason = meta.reason;
        }
    }
}

control RtChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RtDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.pi);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
    }
}

V1Switch(RtParser(), RtVerify(), RtIngress(), RtEgress(), RtChecksum(),
         RtDeparser()) main;
