/* Token-bucket rate limiter per IPv4 source address (LRU hash, so memory is
 * bounded and idle sources are forgotten). RATE tokens per second, bucket
 * depth BURST. Returns 1 while the source is within its rate. */
#include "sluice_bpf.h"

#define RATE 1000ULL
#define BURST 20ULL
#define NS_PER_TOKEN (1000000000ULL / RATE)

struct bucket {
	__u64 tokens;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct bucket);
} buckets SEC(".maps");

SEC("xdp")
int rate_limiter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bswap16(ETH_P_IP))
		return 1;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return 1;
	__u32 src = ip->saddr;
	__u64 now = bpf_ktime_get_ns();
	struct bucket *b = bpf_map_lookup_elem(&buckets, &src);
	if (!b) {
		struct bucket nb = { BURST - 1, now };
		bpf_map_update_elem(&buckets, &src, &nb, BPF_ANY);
		return 1;
	}
	__u64 add = (now - b->last_ns) / NS_PER_TOKEN;
	if (add) {
		b->tokens += add;
		if (b->tokens > BURST)
			b->tokens = BURST;
		b->last_ns += add * NS_PER_TOKEN;
	}
	if (b->tokens == 0)
		return 0;
	b->tokens -= 1;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
