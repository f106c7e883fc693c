// A calculator in the switch (v1model): a frame carrying the custom
// `calc` header (ethertype 0x1234, magic "P4", version 1) has
// `result = a OP b` computed and is sent back out of the port it came
// in on, with its MAC addresses swapped. Anything else is dropped.
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_CALC = 0x1234;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

header calc_t {
    bit<8> p;        // 'P'
    bit<8> four;     // '4'
    bit<8> version;  // 1
    bit<8> op;       // '+' '-' '&' '|' '^'
    bit<32> a;
    bit<32> b;
    bit<32> result;
}

struct headers_t {
    ethernet_t eth;
    calc_t calc;
}

struct meta_t { }

parser CalcParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ethertype) {
            ETHERTYPE_CALC: magic;
            default: accept;
        }
    }
    state magic {
        // Look before taking: a frame with the ethertype but not the
        // magic stays an ordinary (dropped) frame.
        transition select(pkt.lookahead<bit<24>>()) {
            0x503401: calc;   // "P4", version 1
            default: accept;
        }
    }
    state calc {
        pkt.extract(hdr.calc);
        transition accept;
    }
}

control CalcVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control CalcIngress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    action reply(bit<32> value) {
        hdr.calc.result = value;
        bit<48> mac = hdr.eth.dst;
        hdr.eth.dst = hdr.eth.src;
        hdr.eth.src = mac;
        std.egress_spec = std.ingress_port;
    }
    action add() { reply(hdr.calc.a + hdr.calc.b); }
    action sub() { reply(hdr.calc.a - hdr.calc.b); }
    action and() { reply(hdr.calc.a & hdr.calc.b); }
    action or() { reply(hdr.calc.a | hdr.calc.b); }
    action xor() { reply(hdr.calc.a ^ hdr.calc.b); }
    action drop() { mark_to_drop(std); }

    table calculate {
        key = { hdr.calc.op: exact; }
        actions = { add; sub; and; or; xor; drop; }
        const default_action = drop();
        const entries = {
            0x2b: add();   // '+'
            0x2d: sub();   // '-'
            0x26: and();   // '&'
            0x7c: or();    // '|'
            0x5e: xor();   // '^'
        }
    }

    apply {
        if (hdr.calc.isValid()) {
            calculate.apply();
        } else {
            drop();
        }
    }
}

control CalcEgress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    apply { }
}

control CalcChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control CalcDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.calc);
    }
}

V1Switch(CalcParser(), CalcVerify(), CalcIngress(), CalcEgress(),
         CalcChecksum(), CalcDeparser()) main;
