// sluice built-in: the v1model architecture (BMv2 simple_switch),
// declared here by sluice for its own front end.
//
// Define V1MODEL_VERSION before including to choose the variant; the
// default is the original 20180101 interface. 20200408 adds the
// PortId_t typedef and index-type parameters on counter, meter and
// register.
#ifndef SLUICE_V1MODEL_P4
#define SLUICE_V1MODEL_P4
#define _V1_MODEL_P4_

#include <core.p4>

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,
    optional,
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#define SLUICE_PORT PortId_t
#else
#define SLUICE_PORT bit<9>
#endif

// Per-packet metadata from and to the switch.
@metadata @name("standard_metadata")
struct standard_metadata_t {
    SLUICE_PORT ingress_port;
    SLUICE_PORT egress_spec;
    SLUICE_PORT egress_port;
    bit<32> instance_type;
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp") bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth") bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta") bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth") bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp") bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp") bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp") bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid") bit<16> egress_rid;
    bit<1> checksum_error;
    error parser_error;
    @alias("intrinsic_metadata.priority") bit<3> priority;
}
#undef SLUICE_PORT

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

// Index type of counter, meter and register arrays.
#if V1MODEL_VERSION >= 20200408
#define SLUICE_INDEX_PARAMS <I>
#define SLUICE_INDEX I
#else
#define SLUICE_INDEX_PARAMS
#define SLUICE_INDEX bit<32>
#endif

// An array of `size` counters.
extern counter SLUICE_INDEX_PARAMS {
    counter(bit<32> size, CounterType type);
    void count(in SLUICE_INDEX index);
}

// One counter per entry of the table it is attached to.
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

// Colors a meter writes.
#define V1MODEL_METER_COLOR_GREEN 0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED 2

// An array of `size` meters.
extern meter SLUICE_INDEX_PARAMS {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in SLUICE_INDEX index, out T result);
}

// One meter per entry of the table it is attached to.
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

// An array of `size` values of type T, kept across packets.
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
#else
extern register<T> {
#endif
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in SLUICE_INDEX index);
    void write(in SLUICE_INDEX index, in T value);
}
#undef SLUICE_INDEX_PARAMS
#undef SLUICE_INDEX

// A table implementation sharing action entries among entries.
extern action_profile {
    action_profile(bit<32> size);
}

// A uniformly random value in [lo, hi].
extern void random<T>(out T result, in T lo, in T hi);

// Sends `data` to the control plane.
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

// Drop the packet at the end of the current pipeline. The form without
// an argument is the old one.
@deprecated("use mark_to_drop(standard_metadata)")
extern void mark_to_drop();
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

// result = base + hash(data) % max (result = base when max is 0).
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

// An action profile whose member is chosen by a hash of the selector keys.
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("use verify_checksum/update_checksum")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

// Checksums over the fields of `data` (a tuple or struct); the
// `_with_payload` forms also cover the packet's payload.
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

// Packet replication and recirculation.
extern void clone(in CloneType type, in bit<32> session);
@deprecated("use resubmit_preserving_field_list")
extern void resubmit<T>(in T data);
extern void resubmit_preserving_field_list(bit<8> index);
@deprecated("use recirculate_preserving_field_list")
extern void recirculate<T>(in T data);
extern void recirculate_preserving_field_list(bit<8> index);
@deprecated("use clone_preserving_field_list")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

// Keep only the first `length` bytes of the packet on output.
extern void truncate(in bit<32> length);

// Checks for the model checker; assert also fails at run time.
extern void assert(in bool check);
extern void assume(in bool check);

// Log a message (with `{}` placeholders filled from `data`).
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

// The pipeline: parser, checksum verification, ingress, egress,
// checksum update, deparser.
parser Parser<H, M>(packet_in b, out H parsedHdr, inout M meta, inout standard_metadata_t standard_metadata);
control VerifyChecksum<H, M>(inout H hdr, inout M meta);
@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control ComputeChecksum<H, M>(inout H hdr, inout M meta);
@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p, VerifyChecksum<H, M> vr, Ingress<H, M> ig, Egress<H, M> eg, ComputeChecksum<H, M> ck, Deparser<H> dep);

#endif
