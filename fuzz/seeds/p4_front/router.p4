// An IPv4 router for sluice (v1model): longest-prefix match on the
// destination, MAC rewrite, TTL decrement and a recomputed header
// checksum. Packets that are not IPv4, or whose TTL would reach zero,
// are dropped; so are packets with no route.
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<9> port_t;

header ethernet_t {
    mac_t dst;
    mac_t src;
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
    ip4_t src;
    ip4_t dst;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t ip;
}

struct meta_t { }

parser RouterParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ethertype) {
            ETHERTYPE_IPV4: ip;
            default: accept;
        }
    }
    state ip {
        pkt.extract(hdr.ip);
        // Options are carried as payload; only 20-byte headers are
        // checked and recomputed.
        verify(hdr.ip.ihl == 5, error.ParserInvalidArgument);
        transition accept;
    }
}

control RouterVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ip.isValid(),
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.total_len,
              hdr.ip.id, hdr.ip.flags, hdr.ip.frag_offset, hdr.ip.ttl,
              hdr.ip.protocol, hdr.ip.src, hdr.ip.dst },
            hdr.ip.checksum, HashAlgorithm.csum16);
    }
}

control RouterIngress(inout headers_t hdr, inout meta_t meta,
                      inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }

    // Send towards the next hop: its MAC becomes the destination, the
    // router's port MAC the source.
    action forward(mac_t next_hop, mac_t port_mac, port_t port) {
        hdr.eth.src = port_mac;
        hdr.eth.dst = next_hop;
        hdr.ip.ttl = hdr.ip.ttl - 1;
        std.egress_spec = port;
    }

    table routes {
        key = { hdr.ip.dst: lpm; }
        actions = { forward; drop; }
        default_action = drop();
        size = 131072;
    }

    apply {
        if (std.parser_error != error.NoError || !hdr.ip.isValid() ||
            std.checksum_error == 1 || hdr.ip.ttl <= 1) {
            drop();
        } else {
            routes.apply();
        }
    }
}

control RouterEgress(inout headers_t hdr, inout meta_t meta,
                     inout standard_metadata_t std) {
    apply { }
}

control RouterChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ip.isValid(),
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.total_len,
              hdr.ip.id, hdr.ip.flags, hdr.ip.frag_offset, hdr.ip.ttl,
              hdr.ip.protocol, hdr.ip.src, hdr.ip.dst },
            hdr.ip.checksum, HashAlgorithm.csum16);
    }
}

control RouterDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
    }
}

V1Switch(RouterParser(), RouterVerify(), RouterIngress(), RouterEgress(),
         RouterChecksum(), RouterDeparser()) main;
