/* p0f-style SYN signature filter: matches TCP SYNs whose IP TTL, DF bit,
 * window, and TCP option layout (MSS, SACK-permitted, timestamps, window
 * scale — in Linux's order) fit a "Linux 3.x+" signature. Counts matches
 * per signature class in an array map. Returns 1 on match. */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} sig_hits SEC(".maps");

SEC("xdp")
int p0f_syn(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip;
	struct tcphdr *tcp = parse_tcp(ctx, &ip);
	if (!tcp || !tcp->syn || tcp->ack)
		return 0;
	__u32 cls = 0;
	if (ip->ttl > 64 || !(ip->frag_off & bswap16(0x4000)))
		cls = 1; /* not Linux-like IP layer */
	__u8 *opt = (__u8 *)(tcp + 1);
	/* Linux: MSS(2,4) SACKOK(4,2) TS(8,10) NOP WS(3,3) */
	if (cls == 0) {
		if ((void *)(opt + 20) > end)
			cls = 2;
		else if (opt[0] != 2 || opt[1] != 4 || opt[4] != 4 || opt[5] != 2 || opt[6] != 8 ||
			 opt[7] != 10 || opt[16] != 1 || opt[17] != 3 || opt[18] != 3)
			cls = 2;
		else if (opt[19] > 14)
			cls = 3;
	}
	__u64 *n = bpf_map_lookup_elem(&sig_hits, &cls);
	if (n)
		*n += 1;
	return cls == 0;
}

char LICENSE[] SEC("license") = "GPL";
