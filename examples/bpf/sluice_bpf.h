/* Minimal definitions for sluice filter programs (no libbpf needed).
 * Build: clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c prog.c
 * Helper ids and map type numbers are Linux's. */
#ifndef SLUICE_BPF_H
#define SLUICE_BPF_H
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/in.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_trace_printk)(const char *fmt, __u32 fmt_size, ...) = (void *)6;

#define bswap16(x) __builtin_bswap16(x)
#define bswap32(x) __builtin_bswap32(x)

/* Full 5-tuple (Oko's example keyed on 4 bytes of it). */
struct flow5 {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};

/* Parses Ethernet/IPv4/TCP; returns the TCP header or 0. Fills *ip. */
static __always_inline struct tcphdr *parse_tcp(struct xdp_md *ctx, struct iphdr **ipp)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto != bswap16(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return 0;
	if (ip->protocol != IPPROTO_TCP || ip->ihl < 5)
		return 0;
	struct tcphdr *tcp = (void *)ip + ip->ihl * 4;
	if ((void *)(tcp + 1) > end)
		return 0;
	*ipp = ip;
	return tcp;
}
#endif
