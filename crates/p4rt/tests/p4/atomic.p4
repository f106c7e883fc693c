// Write atomicity: tables t1 and t2 both match the destination MAC, so one
// packet shows which of a batch's two entries it saw: it leaves by port
// 1 + a + b, where t1's entry sets a = 1 and t2's sets b = 2 (port 1:
// neither, 2: t1 only, 3: t2 only, 4: both). t1 has a direct counter;
// counter `seen`, register `cells` and multicast groups are also written
// in the rollback tests.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ethertype;
}

struct headers_t { ethernet_t eth; }

struct meta_t {
    bit<9> a;
    bit<9> b;
    bit<32> r;
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
    direct_counter(CounterType.packets_and_bytes) t1_hits;
    counter(4, CounterType.packets_and_bytes) seen;
    register<bit<32>>(4) cells;

    action mark_a(bit<9> v) { meta.a = v; }
    action mark_b(bit<9> v) { meta.b = v; }

    table t1 {
        key = { hdr.eth.dst: exact; }
        actions = { mark_a; NoAction; }
        default_action = NoAction();
        counters = t1_hits;
    }
    table t2 {
        key = { hdr.eth.dst: exact; }
        actions = { mark_b; NoAction; }
        default_action = NoAction();
    }

    apply {
        meta.a = 0;
        meta.b = 0;
        t1.apply();
        t2.apply();
        std.egress_spec = 1 + meta.a + meta.b;
        seen.count(0);
        cells.read(meta.r, 0);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
