#!/usr/bin/env bash
# Regenerate crates/ofp/tests/fixtures/ovs-ofctl/*.hex from a real peer:
# a private Open vSwitch 3.1 (userspace datapath, in its own network
# namespace) and ovs-ofctl -O OpenFlow13, recorded by the proxy in
# crates/sluice/tests/support/. Needs root and Debian's openvswitch-switch.
# The scenario (which commands, in which order) is
# crates/sluice/tests/support/scenario.rs.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v ovs-vswitchd >/dev/null || { echo "installing Open vSwitch" >&2; apt-get install -y openvswitch-switch openvswitch-common; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo test -p sluice --test ovs_capture -- --ignored --exact regenerate_fixtures --nocapture
echo "fixtures written to crates/ofp/tests/fixtures/ovs-ofctl/" >&2
