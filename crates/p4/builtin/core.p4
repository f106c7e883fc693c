// sluice built-in: the P4-16 core library (language spec, appendix on
// core.p4), declared here by sluice for its own front end.
#ifndef SLUICE_CORE_P4
#define SLUICE_CORE_P4
// Compatibility: programs test for the conventional guard name.
#define _CORE_P4_

// Errors the core library can raise.
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

// Input packet, read by parsers.
extern packet_in {
    // Fixed-size header.
    void extract<T>(out T hdr);
    // Header ending in a varbit field of the given size.
    void extract<T>(out T hdr, in bit<32> varbit_bits);
    T lookahead<T>();
    void advance(in bit<32> bits);
    // Packet length in bytes.
    bit<32> length();
}

// Output packet, written by deparsers.
extern packet_out {
    void emit<T>(in T hdr);
}

// In a parser: go to `reject` with `err` unless `cond` holds.
extern void verify(in bool cond, in error err);

// The action that does nothing.
@noWarn("unused")
action NoAction() {}

// Match kinds every architecture has.
match_kind {
    exact,
    ternary,
    lpm
}

// Compile-time checks.
extern bool static_assert(bool cond, string msg);
extern bool static_assert(bool cond);

#endif
