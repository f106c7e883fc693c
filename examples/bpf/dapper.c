/* Dapper-style TCP diagnosis: per-connection statistics (5-tuple key):
 * packets, payload bytes, retransmissions (sequence number not advancing
 * with payload), zero-window advertisements, largest window, flags seen.
 * Always returns 1 (observe only). */
#include "sluice_bpf.h"

struct tcp_stats {
	__u64 packets;
	__u64 bytes;
	__u32 retrans;
	__u32 zero_win;
	__u32 max_win;
	__u32 next_seq;
	__u32 flags_seen;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct flow5);
	__type(value, struct tcp_stats);
} stats SEC(".maps");

SEC("xdp")
int dapper(struct xdp_md *ctx)
{
	struct iphdr *ip;
	struct tcphdr *tcp = parse_tcp(ctx, &ip);
	if (!tcp)
		return 1;
	struct flow5 k = {};
	k.saddr = ip->saddr;
	k.daddr = ip->daddr;
	k.sport = tcp->source;
	k.dport = tcp->dest;
	k.proto = IPPROTO_TCP;
	__u32 ip_len = bswap16(ip->tot_len);
	__u32 hdrs = ip->ihl * 4 + tcp->doff * 4;
	__u32 payload = ip_len > hdrs ? ip_len - hdrs : 0;
	__u32 seq = bswap32(tcp->seq);
	__u32 win = bswap16(tcp->window);
	__u32 flags = ((__u8 *)tcp)[13];

	struct tcp_stats *s = bpf_map_lookup_elem(&stats, &k);
	if (!s) {
		struct tcp_stats n = {};
		n.packets = 1;
		n.bytes = payload;
		n.max_win = win;
		n.zero_win = win == 0;
		n.next_seq = seq + payload + (tcp->syn ? 1 : 0);
		n.flags_seen = flags;
		bpf_map_update_elem(&stats, &k, &n, BPF_ANY);
		return 1;
	}
	s->packets++;
	s->bytes += payload;
	if (payload && (__s32)(seq - s->next_seq) < 0)
		s->retrans++;
	else
		s->next_seq = seq + payload;
	if (win == 0)
		s->zero_win++;
	if (win > s->max_win)
		s->max_win = win;
	s->flags_seen |= flags;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
