/* Port knocking, OpenState's classic example, as a filter program: a
 * source host must send UDP to KNOCK_1, KNOCK_2 and KNOCK_3 in that
 * order, each within KNOCK_WINDOW_NS of the last, before TCP to
 * OPEN_PORT passes. Any other TCP or UDP packet from the host resets it
 * to CLOSED; a knock on KNOCK_1 always starts a new sequence. OPEN lasts
 * while the host keeps talking to OPEN_PORT (OPEN_IDLE_NS of silence
 * closes it).
 *
 * OpenState's pieces, and what they are here:
 *   state table, lookup and update scope ip_src -> hash map `knock`
 *                                                  keyed on the source
 *   state + idle timeout                          -> `state`, `expires_ns`
 *   flow table matching (state, udp_dst/tcp_dst)  -> the switch below
 *   set_state(next, timeout) action               -> the map update
 *   forward / drop                                -> return 1 / 0: the
 *                       rule's actions, or the lower-priority drop rule.
 *
 * Returns 1 (match) only for TCP to OPEN_PORT from an OPEN source. */
#include "sluice_bpf.h"

#define KNOCK_1 5001
#define KNOCK_2 6002
#define KNOCK_3 7003
#define OPEN_PORT 2222
#define KNOCK_WINDOW_NS 2000000000ULL
#define OPEN_IDLE_NS 10000000000ULL

enum { CLOSED = 0, KNOCKED_1 = 1, KNOCKED_2 = 2, OPEN = 3 };

struct knock {
	__u32 state;
	__u32 resets;      /* wrong knocks and timeouts seen, for operators */
	__u64 expires_ns;  /* the state falls back to CLOSED at this time */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct knock);
} knock SEC(".maps");

SEC("xdp")
int port_knock(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bswap16(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl < 5)
		return 0;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return 0;
	/* TCP and UDP both start with the source and destination ports. */
	__u16 *ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > end)
		return 0;
	__u16 dport = bswap16(ports[1]);
	int udp = ip->protocol == IPPROTO_UDP;

	__u32 src = ip->saddr;
	__u64 now = bpf_ktime_get_ns();
	struct knock *k = bpf_map_lookup_elem(&knock, &src);
	struct knock cur = { CLOSED, 0, 0 };
	if (k) {
		cur = *k;
		if (cur.state != CLOSED && now >= cur.expires_ns) {
			cur.state = CLOSED;
			cur.resets++;
		}
	}

	int pass = 0;
	__u32 next = CLOSED;
	__u64 ttl = 0;
	if (udp && dport == KNOCK_1) {
		next = KNOCKED_1;
		ttl = KNOCK_WINDOW_NS;
	} else if (udp && dport == KNOCK_2 && cur.state == KNOCKED_1) {
		next = KNOCKED_2;
		ttl = KNOCK_WINDOW_NS;
	} else if (udp && dport == KNOCK_3 && cur.state == KNOCKED_2) {
		next = OPEN;
		ttl = OPEN_IDLE_NS;
	} else if (!udp && dport == OPEN_PORT && cur.state == OPEN) {
		next = OPEN;
		ttl = OPEN_IDLE_NS;
		pass = 1;
	} else if (cur.state != CLOSED) {
		cur.resets++;
	}

	if (!k && next == CLOSED)
		return 0; /* keep no state for hosts that never knocked */
	cur.state = next;
	cur.expires_ns = now + ttl;
	bpf_map_update_elem(&knock, &src, &cur, BPF_ANY);
	return pass;
}

char LICENSE[] SEC("license") = "GPL";
