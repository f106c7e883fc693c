//! Reference OpenFlow 1.3 pipeline: flow tables, groups, meters, ports; the oracle every fast path is tested against.
