/* Stateful TCP firewall: a connection state machine in a hash map keyed on
 * the full 5-tuple of the connection's initiator. Returns 1 (match = pass)
 * for packets of connections opened by a SYN and not yet closed, and for
 * non-TCP traffic; 0 (drop) for TCP packets of unknown connections. */
#include "sluice_bpf.h"

enum { SYN_SENT = 1, ESTABLISHED = 2, FIN_WAIT = 3 };

struct conn {
	__u32 state;
	__u32 packets;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow5);
	__type(value, struct conn);
} conns SEC(".maps");

SEC("xdp")
int tcp_firewall(struct xdp_md *ctx)
{
	struct iphdr *ip;
	struct tcphdr *tcp = parse_tcp(ctx, &ip);
	if (!tcp)
		return 1;
	struct flow5 k = {}, r = {};
	k.saddr = ip->saddr;
	k.daddr = ip->daddr;
	k.sport = tcp->source;
	k.dport = tcp->dest;
	k.proto = IPPROTO_TCP;
	r.saddr = ip->daddr;
	r.daddr = ip->saddr;
	r.sport = tcp->dest;
	r.dport = tcp->source;
	r.proto = IPPROTO_TCP;

	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	int reply = 0;
	if (!c) {
		c = bpf_map_lookup_elem(&conns, &r);
		reply = 1;
	}
	if (!c) {
		if (tcp->syn && !tcp->ack) {
			struct conn n = { SYN_SENT, 1 };
			bpf_map_update_elem(&conns, &k, &n, BPF_NOEXIST);
			return 1;
		}
		return 0;
	}
	c->packets++;
	if (tcp->rst) {
		bpf_map_delete_elem(&conns, reply ? &r : &k);
		return 1;
	}
	if (c->state == SYN_SENT && reply && tcp->syn && tcp->ack)
		c->state = ESTABLISHED;
	else if (tcp->fin)
		c->state = FIN_WAIT;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
