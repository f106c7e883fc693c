//! Packet header views (zero-copy), the FlowKey layout and the parser that fills it; packet rewriting and checksums.
