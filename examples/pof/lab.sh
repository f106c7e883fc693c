#!/bin/sh
# Namespaces for the POF walkthrough (README.md). Run as root.
#
#   lab.sh one up     host A (pof-a) -- switch (pof-sw) -- host B (pof-b)
#   lab.sh two up     host A (pof-a) -- switch 1 (pof-s1) -- link -- switch 2 (pof-s2) -- host B (pof-b)
#   lab.sh one|two down
#
# Hosts: A is 10.0.0.1, 02:00:00:00:00:0a; B is 10.0.0.2, 02:00:00:00:00:0b;
# each has one interface, eth0. IPv6 is off everywhere (no stray ND/MLD
# frames in captures). Every veth is created inside a namespace; deleting
# the namespaces ("down") deletes them.
#
#   one: pof-sw holds to-a (port 1) and to-b (port 2).
#   two: pof-s1 holds to-a (port 1) and link1 (port 2);
#        pof-s2 holds link2 (port 1) and to-b (port 2);
#        the hosts' MTU is 1492, so a full-size IPv4 packet plus the
#        tunnel's 8-byte shim still fits the link's 1500.
#
# crates/sluice/tests/pof_netns.rs builds the same topologies (with names
# unique to each test run).
set -eu

ns_add() {
	ip netns add "$1"
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
}

# host NS MAC IP MTU SWITCH_NS SWITCH_IF
host() {
	ns_add "$1"
	ip -n "$5" link add "$6" type veth peer name eth0 netns "$1"
	ip -n "$5" link set "$6" up
	ip -n "$1" link set eth0 address "$2" mtu "$4" up
	ip -n "$1" addr add "$3/24" dev eth0
}

case "${1:-}-${2:-}" in
one-up)
	ns_add pof-sw
	host pof-a 02:00:00:00:00:0a 10.0.0.1 1500 pof-sw to-a
	host pof-b 02:00:00:00:00:0b 10.0.0.2 1500 pof-sw to-b
	;;
two-up)
	ns_add pof-s1
	ns_add pof-s2
	host pof-a 02:00:00:00:00:0a 10.0.0.1 1492 pof-s1 to-a
	host pof-b 02:00:00:00:00:0b 10.0.0.2 1492 pof-s2 to-b
	ip -n pof-s1 link add link1 type veth peer name link2 netns pof-s2
	ip -n pof-s1 link set link1 up
	ip -n pof-s2 link set link2 up
	;;
one-down)
	for n in pof-a pof-b pof-sw; do ip netns del "$n" 2>/dev/null || true; done
	;;
two-down)
	for n in pof-a pof-b pof-s1 pof-s2; do ip netns del "$n" 2>/dev/null || true; done
	;;
*)
	echo "usage: $0 one|two up|down" >&2
	exit 2
	;;
esac
