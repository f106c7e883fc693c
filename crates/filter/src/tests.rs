//! Differential tests against libpcap (`pcap_compile` + `pcap_offline_filter`)
//! over a generated capture with varied traffic, and property tests
//! (random expressions; optimised vs unoptimised IR; native vs interpreter).

pub use crate::gen::corpus;
use crate::libpcap::{Bpf, NETMASK_UNKNOWN};
use crate::{Filter, Options};
use proptest::prelude::*;

pub const NETMASK: u32 = 0xffff_ff00;

pub fn opts() -> Options {
    Options { netmask: Some(NETMASK) }
}

// ------------------------------------------------------------ packets

// ------------------------------------------------------------ expressions

/// The hand-written corpus: every primitive, qualifier and operator.
pub fn expressions() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "ip",
        "ip6",
        "arp",
        "rarp",
        "tcp",
        "udp",
        "sctp",
        "icmp",
        "icmp6",
        "igmp",
        "igrp",
        "pim",
        "vrrp",
        "carp",
        "ah",
        "esp",
        "not ip",
        "!tcp",
        "ip and tcp",
        "ip && udp",
        "tcp or udp",
        "tcp || icmp",
        "ip or arp and tcp",
        "not ip or tcp",
        "not (ip or arp)",
        "(tcp or udp) and not ip6",
        "ether host 00:11:22:33:44:55",
        "ether src 00:11:22:33:44:55",
        "ether dst ff:ff:ff:ff:ff:ff",
        "ether src or dst 02:00:00:00:00:01",
        "ether src and dst 00:11:22:33:44:55",
        "ether dst 01-00-5e-00-00-05",
        "ether broadcast",
        "broadcast",
        "ether multicast",
        "multicast",
        "ip broadcast",
        "ip multicast",
        "ip6 multicast",
        "not ether multicast and ip",
        "ether proto 0x800",
        "ether proto 0x86dd",
        "ether proto 10",
        "ether proto 0x42",
        "ether proto 0x1234",
        "ether proto \\ip",
        "ether proto \\arp",
        "ether proto \\ip6",
        "ether proto 1500",
        "ether proto 0xfe",
        "ether proto 6",
        "ether proto 0xf0",
        "ether proto 0xaa",
        "ether proto 0x42 or ether proto 0xfe",
        "ether proto 1501",
        "host 10.0.0.1",
        "host 192.168.1.1",
        "src host 10.0.0.1",
        "dst host 8.8.8.8",
        "src or dst host 10.1.2.3",
        "src and dst host 10.0.0.1",
        "ip host 10.0.0.1",
        "arp host 10.0.0.1",
        "rarp host 192.168.1.1",
        "ip src host 224.0.0.5",
        "host 10.1",
        "host 10",
        "host 10.1.2",
        "host 10.0.0.1 or 8.8.8.8",
        "host 10.0.0.1 and not 8.8.8.8",
        "host 10.0.0.1 or (8.8.8.8 or 192.168.1.1)",
        "net 10.0.0.0/8",
        "net 192.168.1.0/24",
        "net 10.0.0.0 mask 255.0.0.0",
        "src net 192.168.0.0/16",
        "dst net 224.0.0.0/4",
        "net 10",
        "net 192.168",
        "net 192.168.1",
        "net 0.0.0.0/0",
        "net 10.1.2.3/32",
        "ip net 10.0.0.0/8",
        "arp net 10.0.0.0/8",
        "net 0x0a",
        "net 0",
        "ip6 host 2001:db8::1",
        "host 2001:db8::1",
        "ip6 src host fe80::200:ff:fe00:1",
        "ip6 dst host ff02::1",
        "ip6 net 2001:db8::/32",
        "net fe80::/10",
        "net ::/0",
        "ip6 net ff00::/8",
        "src net 2001:db8::/64",
        "src or dst host ::1",
        "host ::1 or ff02::1",
        "port 80",
        "port 443",
        "port 53",
        "port 0",
        "port 65535",
        "tcp port 80",
        "udp port 53",
        "sctp port 80",
        "src port 80",
        "dst port 443",
        "tcp src port 80",
        "tcp dst port 22",
        "udp src or dst port 53",
        "tcp src and dst port 80",
        "port 80 or 443",
        "tcp port 80 or 443",
        "tcp port 80 and not 443",
        "port 80 or 443 or 53",
        "not port 80",
        "ip and port 80",
        "ip6 and port 80",
        "port 6000",
        "portrange 0-6000",
        "portrange 80-443",
        "portrange 443-80",
        "tcp portrange 1-1024",
        "udp src portrange 50-60",
        "dst portrange 6000-65535",
        "portrange 80",
        "portrange 0-0",
        "sctp portrange 70-90",
        "proto 6",
        "ip proto 6",
        "ip proto 17",
        "ip6 proto 6",
        "ip6 proto 58",
        "ip proto 300",
        "proto 17",
        "ip proto \\tcp",
        "ip6 proto \\udp",
        "proto \\icmp",
        "ip proto 51",
        "ip6 proto 0",
        "ip6 proto 44",
        "protochain 6",
        "ip protochain 6",
        "ip6 protochain 6",
        "ip6 protochain 17",
        "ip6 protochain 58",
        "ip6 protochain 44",
        "ip protochain 51",
        "ip6 protochain 51",
        "ip6 protochain \\tcp",
        "vlan",
        "vlan 100",
        "vlan 200",
        "vlan 4095",
        "vlan 0",
        "vlan and ip",
        "vlan 100 and ip",
        "vlan and vlan",
        "vlan 100 and vlan 200",
        "vlan and tcp port 80",
        "ip and vlan",
        "vlan or ip",
        "not vlan",
        "vlan and host 10.0.0.1",
        "vlan and ip6",
        "vlan and arp",
        "vlan and vlan and ip",
        "vlan 1 and vlan and udp",
        "(vlan) and ip",
        "not vlan 100 and ip",
        "vlan and ether proto 0x800",
        "vlan and ip[0] = 0x45",
        "vlan and tcp[0:2] = 80",
        "mpls",
        "mpls 5",
        "mpls 100",
        "mpls and ip",
        "mpls 5 and ip",
        "mpls and mpls",
        "mpls and mpls and ip",
        "mpls and ip6",
        "mpls 5 and mpls 100",
        "mpls and tcp",
        "mpls and udp port 53",
        "mpls and host 10.0.0.1",
        "mpls and ip[9] = 6",
        "vlan and mpls",
        "vlan and mpls and ip",
        "mpls 1048575",
        "mpls and net 10.0.0.0/8",
        "less 60",
        "greater 60",
        "less 0",
        "greater 1500",
        "len < 64",
        "len > 100",
        "len = 60",
        "len >= 14",
        "len <= 54",
        "len != 60",
        "len - 14 > 40",
        "len * 2 > 200",
        "len / 2 = 30",
        "len % 7 = 3",
        "0 = -len % 2",
        "len * 2 % 3 + 4 = 0",
        "len % 2 * 3 = 1",
        "len & 1 = 1",
        "len | 1 = 61",
        "len ^ 1 = 61",
        "len << 1 > 100",
        "len >> 1 < 40",
        "-len = 0",
        "len + 4294967295 = 59",
        "len * 4294967295 > 0",
        "ether[0] = 0xff",
        "ether[0] & 1 != 0",
        "ether[12:2] = 0x800",
        "ether[6:4] = 0x33445500",
        "ether[100] = 0",
        "ether[1000] = 0 or ip",
        "ip or ether[1000] = 0",
        "ether[len - 1] = 0",
        "ether[len] = 0",
        "ether[len - 4:4] > 0",
        "ether[2147483647] = 0",
        "ether[2147483648] = 0",
        "ether[4294967295] = 0",
        "ether[4294967295:2] = 0",
        "ether[0:4] = 4294967295",
        "ip[0] = 0x45",
        "ip[0] & 0xf > 5",
        "ip[9] = 6",
        "ip[6:2] & 0x1fff != 0",
        "ip[6:2] & 0x3fff = 0",
        "ip[8] > 32",
        "ip[16:4] = 0xc0a801ff",
        "ip[2:2] > 40",
        "ip[1] = 0",
        "ip[100] = 1",
        "ip[ip[0] & 0xf] = 0",
        "ip6[6] = 6",
        "ip6[40] = 0",
        "ip6[24] = 0xff",
        "ip6[0] & 0xf0 = 0x60",
        "arp[7] = 1",
        "arp[6:2] = 2",
        "rarp[7] = 2",
        "tcp[0:2] = 80",
        "tcp[2:2] = 443",
        "tcp[13] = 2",
        "tcp[13] & 2 != 0",
        "tcp[tcpflags] & tcp-syn != 0",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn|tcp-ack",
        "tcp[tcpflags] & tcp-fin != 0",
        "tcp[tcpflags] & tcp-rst != 0",
        "tcp[tcpflags] & tcp-push != 0",
        "tcp[tcpflags] = tcp-ack",
        "tcp[tcpflags] & (tcp-ece|tcp-cwr) != 0",
        "tcp[tcpflags] & tcp-urg != 0",
        "tcp[12] >> 4 > 5",
        "tcp[((tcp[12] & 0xf0) >> 2)] = 1",
        "tcp[20] = 2",
        "tcp[100] = 0",
        "tcp[4294967295] = 0",
        "tcp[2147483648] = 0",
        "udp[0:2] = 53",
        "udp[2:2] = 53",
        "udp[4:2] > 8",
        "sctp[0:2] = 80",
        "icmp[0] = 8",
        "icmp[icmptype] = icmp-echo",
        "icmp[icmptype] = icmp-echoreply",
        "icmp[icmptype] != icmp-echo and icmp[icmptype] != icmp-echoreply",
        "icmp[icmpcode] = 1",
        "icmp[icmptype] = icmp-unreach",
        "icmp[icmptype] = icmp-timxceed",
        "icmp6[0] = 128",
        "icmp6[icmp6type] = icmp6-echo",
        "icmp6[icmp6type] = icmp6-neighborsolicit",
        "icmp6[icmp6type] = icmp6-echoreply",
        "icmp6[1] = 0",
        "igmp[0] = 0x11",
        "pim[0] = 0",
        "vrrp[0] = 0",
        "1 = 1",
        "1 = 0",
        "0 = 0 or ip",
        "2147483647 + 1 = 2147483648",
        "4294967295 + 1 = 0",
        "0 - 1 = 4294967295",
        "1 << 31 = 2147483648",
        "4294967295 >> 31 = 1",
        "7 / 2 = 3",
        "7 % 2 = 1",
        "1 ^ 2 & 3 = 3",
        "1 | 2 ^ 3 = 1",
        "1 * 2 ^ 3 + 4 = 14",
        "-1 = 4294967295",
        "- 2 * 3 = 4294967290",
        "ether[0] / (ether[1] - ether[1]) = 0",
        "ether[0] % (ether[1] - ether[1]) = 0 or ip",
        "not ether[0] / (ether[1] - ether[1]) = 0",
        "len / ether[0] > 0",
        "ether[0] << ether[1] = 0",
        "ether[0] >> (ether[1] + 40) = 0",
        "len >> 32 - 1 = 0",
        "tcp and (port 80 or port 443)",
        "ip and not tcp and not udp",
        "ip6 and (tcp or udp) and port 53",
        "ether src 00:11:22:33:44:55 and ip and src net 10.0.0.0/8 and tcp dst port 80",
        "(ip or ip6) and (tcp[13] & 2 != 0 or udp)",
        "not (port 80 or port 443) and tcp",
        "host 10.0.0.1 and (tcp port 80 or udp port 53)",
        "tcp src port 80 and tcp[13] & 0x12 = 0x12",
        "icmp or icmp6 or arp",
        "ip[9] = 1 and icmp[0] = 8",
        "udp and udp[8:2] > 0",
        "less 100 and tcp",
        "greater 64 and not arp",
        "ip broadcast or ip multicast",
        "not broadcast and not multicast",
        "ip and ip[6:2] & 0x2000 != 0",
        "ip and ip[6:2] & 0x1fff > 0 and udp",
        "vlan and (tcp or udp) and port 53",
        "mpls 100 or vlan 100",
        "port 80 and vlan",
        "tcp port 80 and len > 60 and ip[8] = 64",
        "(ip) and (not (tcp))",
        "((ip))",
        "ip and (host 10.0.0.1 or host 10.1.2.3) and not port 22",
    ]
    .iter()
    .chain(legacy_expressions().iter())
    .map(|s| s.to_string())
    .collect();
    // Per-primitive value sweeps, including the boundary constants.
    for c in ["0", "1", "2147483647", "2147483648", "4294967295"] {
        v.push(format!("len > {c}"));
        v.push(format!("ether[0] + {c} = {c}"));
        v.push(format!("ether[{c}] = 0"));
        v.push(format!("ip[0:2] < {c}"));
        v.push(format!("tcp[0:4] >= {c}"));
        v.push(format!("{c} - len > {c}"));
        v.push(format!("ether[12:2] * {c} != 0"));
        v.push(format!("len & {c} = {c}"));
    }
    for p in ["80", "443", "53", "22", "6000"] {
        v.push(format!("tcp src port {p}"));
        v.push(format!("udp dst port {p}"));
        v.push(format!("port {p} and ip6"));
    }
    for h in ["10.0.0.1", "192.168.1.255", "224.0.0.5", "255.255.255.255"] {
        v.push(format!("src host {h}"));
        v.push(format!("dst host {h} or arp"));
        v.push(format!("arp src host {h}"));
    }
    v
}

/// Every primitive of the legacy LAN protocols (AppleTalk, DECnet family,
/// 802.2 LLC, OSI / IS-IS, IPX, STP, NetBEUI); each must accept at least
/// one packet of the generated capture.
pub const LEGACY_PRIMITIVES: &[&str] = &[
    "atalk",
    "aarp",
    "decnet",
    "lat",
    "sca",
    "moprc",
    "mopdl",
    "iso",
    "esis",
    "es-is",
    "isis",
    "is-is",
    "clnp",
    "stp",
    "ipx",
    "netbeui",
    "llc",
    "l1",
    "l2",
    "iih",
    "lsp",
    "snp",
    "csnp",
    "psnp",
    "llc i",
    "llc s",
    "llc u",
    "llc rr",
    "llc rnr",
    "llc rej",
    "llc ui",
    "llc ua",
    "llc disc",
    "llc dm",
    "llc sabme",
    "llc test",
    "llc xid",
    "llc frmr",
];

/// Legacy-protocol expressions beyond the bare primitives: qualifiers,
/// `ether proto` forms, combinations with VLAN tags and other primitives.
pub fn legacy_expressions() -> Vec<&'static str> {
    let mut v = LEGACY_PRIMITIVES.to_vec();
    v.extend([
        "llc UI",
        "llc I",
        "llc \\s",
        "not llc",
        "not atalk",
        "ether proto 0xe0",
        "ether proto 0x809b",
        "ether proto 0x80f3",
        "ether proto 0x8137",
        "ether proto 0x6003",
        "ether proto 0x6004",
        "ether proto 0x9000",
        "link proto 0xe0",
        "ether proto \\atalk",
        "ether proto \\aarp",
        "ether proto \\decnet",
        "ether proto \\lat",
        "ether proto \\sca",
        "ether proto \\moprc",
        "ether proto \\mopdl",
        "ether proto \\loopback",
        "ether proto \\iso",
        "ether proto \\stp",
        "ether proto \\ipx",
        "ether proto \\netbeui",
        "iso proto 0x81",
        "iso proto 0x83",
        "iso proto 0",
        "iso proto 300",
        "iso proto \\esis",
        "iso proto \\isis",
        "iso proto \\clnp",
        "iso proto 0x81 or 0x82",
        "isis proto 0x11",
        "isis proto 0x1a",
        "isis proto 0x11 or 0x12",
        "isis proto 300",
        "atalk[0] = 0",
        "decnet[0:2] > 100",
        "lat[0] & 1 = 1",
        "sca[1] = 0",
        "moprc[0] > 7",
        "mopdl[0] < 128",
        "decnet or lat or sca or moprc or mopdl",
        "atalk or aarp",
        "ipx and not llc",
        "llc and not iso",
        "llc and stp",
        "llc u and iso",
        "l1 and not l2",
        "iih or lsp or snp",
        "csnp or psnp",
        "isis and not (l1 or l2)",
        "clnp or esis",
        "vlan and atalk",
        "vlan and ipx",
        "vlan and llc",
        "vlan and llc u",
        "vlan and iso",
        "vlan and isis",
        "vlan and l1",
        "vlan 100 and stp",
        "vlan and decnet",
        "vlan and iso proto 0x83",
        "vlan and ether proto \\ipx",
        "mpls and llc",
        "ipx or ip",
        "atalk or ip6 or tcp port 80",
        "not ipx and not iso and not atalk",
        "ether proto 0xfe and isis",
        "less 60 and llc",
        "greater 64 and ipx",
        "llc and ether[16] & 3 = 3",
        "iso and ether[21] = 0x1a",
        "stp or netbeui",
    ]);
    v
}

/// Expressions libpcap must reject, and so must we.
pub fn bad_expressions() -> Vec<&'static str> {
    vec![
        "tcp udp",
        "and",
        "ip and",
        "(ip",
        "ip)",
        "port 99999",
        "len-1 = 0",
        "len = 4294967296",
        "vlan 4096",
        "mpls 1048576",
        "vlan and mpls and vlan",
        "mpls and arp",
        "len / 0 = 1",
        "len / (0 + 1) = 1",
        "len % 0 = 1",
        "len << 32 = 0",
        "len >> 33 = 0",
        "ether[0:3] = 1",
        "10.0.0.0/8",
        "net 10.0.0.1/8",
        "host 10.0.0.0/8",
        "net 10.0.0.0/33",
        "tcp host 10.0.0.1",
        "ip6 host 10.0.0.1",
        "port 10.0.0.1",
        "ether host 10.0.0.1",
        "host 00:11:22:33:44:55",
        "ip host 2001:db8::1",
        "host fe80::/10",
        "net fe80::1/10",
        "tcp proto 6",
        "ether",
        "ether = 1",
        "80",
        "ip[0",
        "ip[0] =",
        "= 1",
        "link",
        "ip6 broadcast",
        "tcp multicast",
        "src",
        "host",
        "ip port 80",
        "icmp port 80",
        "ip protochain \\nosuchproto",
        "ether proto \\nosuch",
        "not",
        "1 =",
        "ip[0:0] = 1",
        "net 10/8",
        // Legacy protocols: forms libpcap refuses.
        "esis proto 1",
        "clnp proto 1",
        "atalk proto 1",
        "decnet proto 1",
        "lat proto 1",
        "stp proto 1",
        "ipx proto 1",
        "aarp proto 1",
        "l1 proto 1",
        "iso protochain 1",
        "iso host 1",
        "iso src 1",
        "atalk host 1",
        "isis host 1",
        "iso port 1",
        "decnet port 1",
        "mpls and iso",
        "mpls and decnet",
        "mpls and isis",
        "mpls and atalk",
        "llc foo",
        "llc host",
        "llc \\ip",
        "iso[0] = 1",
        "aarp[0] = 1",
        "ipx[0] = 1",
        "stp[0] = 1",
        "isis[0] = 1",
        "iso broadcast",
        "decnet multicast",
        "ether proto \\atalkarp",
        "ether proto \\ISO",
        "ether proto \\esis",
        "isis proto \\isis",
        "isis proto \\tcp",
        "iso proto \\tcp",
        "host llc",
        "host iso",
    ]
}

// ------------------------------------------------------------ the oracle test

struct Outcome {
    exprs: usize,
    packets: usize,
    /// Expressions that both accept and reject some packet of the capture.
    discriminating: usize,
    mismatches: Vec<String>,
}

fn differential(
    exprs: &[String],
    pkts: &[(Vec<u8>, u32)],
    optimize: bool,
    check_ours: bool,
) -> Outcome {
    let mut mism = Vec::new();
    let mut n = 0;
    let mut discriminating = 0;
    for e in exprs {
        let ours = Filter::compile(e, opts());
        let theirs = Bpf::compile(e, optimize, NETMASK);
        match (&ours, &theirs) {
            (Ok(f), Ok(b)) => {
                n += 1;
                if check_ours {
                    assert!(f.is_jitted(), "JIT unavailable for {e:?}");
                }
                let mut seen = [false; 2];
                for (i, (p, wl)) in pkts.iter().enumerate() {
                    let want = b.matches(p, *wl);
                    seen[usize::from(want)] = true;
                    let raw = f.raw.matches(p, *wl);
                    let interp = f.interp(p, *wl);
                    let native = f.matches_wire(p, *wl);
                    if raw != want || interp != want || native != want {
                        mism.push(format!(
                            "{e:?} packet #{i} (caplen {} wirelen {wl}) {:02x?}: libpcap {want}, raw {raw}, opt {interp}, jit {native}",
                            p.len(),
                            &p[..p.len().min(64)]
                        ));
                        break;
                    }
                }
                discriminating += usize::from(seen[0] && seen[1]);
            }
            (Err(_), Err(_)) => {}
            (Ok(_), Err(m)) => {
                mism.push(format!("{e:?}: libpcap rejects ({m}) but sluice accepts"))
            }
            (Err(m), Ok(_)) => {
                mism.push(format!("{e:?}: sluice rejects but libpcap accepts:\n{m}"))
            }
        }
    }
    Outcome { exprs: n, packets: pkts.len(), discriminating, mismatches: mism }
}

#[test]
fn corpus_agrees_with_libpcap_unoptimised() {
    let exprs = expressions();
    assert!(exprs.len() >= 300, "corpus has {} expressions", exprs.len());
    let pkts = corpus(0x5eed, 3000);
    let o = differential(&exprs, &pkts, false, true);
    eprintln!(
        "libpcap (optimize=0): {} expressions ({} discriminating) x {} packets, {} mismatches",
        o.exprs,
        o.discriminating,
        o.packets,
        o.mismatches.len()
    );
    assert!(
        o.discriminating * 10 >= o.exprs * 7,
        "capture too uniform: {} of {}",
        o.discriminating,
        o.exprs
    );
    assert!(
        o.mismatches.is_empty(),
        "{} mismatches:\n{}",
        o.mismatches.len(),
        o.mismatches.join("\n")
    );
}

/// libpcap's optimiser is not semantics-preserving on truncated packets (it
/// drops reads whose result it considers known, e.g. `ld [30]; and #0`, and
/// it merges tests across `or`), and it turns always-false filters into an
/// error. sluice follows the unoptimised semantics. This test checks that
/// every divergence from `optimize=1` is one where libpcap's optimiser
/// changed libpcap's own verdict, and reports how many there are.
#[test]
fn corpus_vs_libpcap_optimiser() {
    let exprs = expressions();
    let pkts = corpus(0xfeed, 3000);
    let mut diverge = 0;
    let mut always_false = 0;
    for e in &exprs {
        let Ok(f) = Filter::compile(e, opts()) else { continue };
        let unopt = Bpf::compile(e, false, NETMASK).expect("unoptimised compile");
        match Bpf::compile(e, true, NETMASK) {
            Ok(opt) => {
                for (p, wl) in &pkts {
                    let ours = f.matches_wire(p, *wl);
                    let o = opt.matches(p, *wl);
                    if ours != o {
                        diverge += 1;
                        assert_ne!(
                            o,
                            unopt.matches(p, *wl),
                            "{e:?} on {p:02x?}: not explained by libpcap's optimiser"
                        );
                    }
                }
            }
            Err(m) => {
                assert!(m.contains("rejects all packets"), "{e:?}: {m}");
                always_false += 1;
                assert!(
                    pkts.iter().all(|(p, wl)| !f.matches_wire(p, *wl)),
                    "{e:?} is not always false"
                );
            }
        }
    }
    eprintln!("libpcap optimize=1: {diverge} (expression, packet) verdicts changed by libpcap's optimiser, {always_false} expressions it refuses as always-false");
}

#[test]
fn rejected_like_libpcap() {
    for e in bad_expressions() {
        let theirs = Bpf::compile(e, false, NETMASK);
        assert!(theirs.is_err(), "libpcap accepts {e:?}; fix the test list");
        let ours = Filter::compile_ir(e, opts());
        assert!(ours.is_err(), "sluice accepts {e:?} which libpcap rejects");
    }
    // Netmask unknown: `ip broadcast` is an error in both.
    assert!(Bpf::compile("ip broadcast", false, NETMASK_UNKNOWN).is_err());
    assert!(Filter::compile_ir("ip broadcast", Options { netmask: None }).is_err());
}

/// Documented gaps: libpcap accepts these, sluice refuses them with a clear
/// message (name resolution, non-Ethernet encapsulations, `gateway`).
#[test]
fn known_unsupported_are_refused_clearly() {
    for e in [
        "host localhost",
        "port http",
        "gateway foo",
        "inbound",
        "decnet host 10.23",
        "decnet src 1.2",
        "decnet dst 63.1023",
    ] {
        if e.starts_with("decnet") {
            assert!(Bpf::compile(e, false, NETMASK).is_ok(), "libpcap rejects {e:?}");
        }
        let err = Filter::compile_ir(e, opts()).err().unwrap_or_else(|| panic!("{e:?} accepted"));
        assert!(err.to_string().contains('^'), "{err}");
    }
}

/// Each legacy primitive accepts some packets of the generated capture and
/// rejects others (according to libpcap, with which sluice agrees on every
/// packet), so the differential test can tell right from wrong for them:
/// in particular the capture holds 802.3/LLC, SNAP and IS-IS frames.
#[test]
fn legacy_primitives_are_exercised_by_the_capture() {
    // Every legacy corpus expression is valid for both (the differential
    // test silently skips expressions both reject).
    for e in legacy_expressions() {
        assert!(Bpf::compile(e, false, NETMASK).is_ok(), "libpcap rejects {e:?}");
        assert!(Filter::compile_ir(e, opts()).is_ok(), "sluice rejects {e:?}");
    }
    let pkts = corpus(0x5eed, 3000);
    let mut report = Vec::new();
    for e in LEGACY_PRIMITIVES.iter().chain(["isis proto 0x11", "iso proto 0x81"].iter()) {
        let b = Bpf::compile(e, false, NETMASK).unwrap_or_else(|m| panic!("libpcap: {e}: {m}"));
        let f = Filter::compile(e, opts()).unwrap_or_else(|m| panic!("sluice: {m}"));
        let mut hits = 0;
        for (i, (p, wl)) in pkts.iter().enumerate() {
            let want = b.matches(p, *wl);
            assert_eq!(f.matches_wire(p, *wl), want, "{e:?} packet #{i} {p:02x?}");
            assert_eq!(f.raw.matches(p, *wl), want, "raw {e:?} packet #{i} {p:02x?}");
            hits += usize::from(want);
        }
        report.push((e, hits));
    }
    let show: Vec<String> = report.iter().map(|(e, h)| format!("{e}={h}")).collect();
    eprintln!("legacy primitive hits over {} packets: {}", pkts.len(), show.join(" "));
    for (e, hits) in report {
        assert!(hits > 0, "{e:?} matches no generated packet");
        assert!(hits < pkts.len(), "{e:?} matches every generated packet");
    }
}

/// Hand-checked expansions on literal frames (independent of libpcap).
#[test]
fn legacy_literal_frames() {
    let mut atalk_snap = vec![0u8; 12];
    atalk_snap.extend_from_slice(&[0x00, 0x30, 0xaa, 0xaa, 0x03, 0x08, 0x00, 0x07, 0x80, 0x9b]);
    atalk_snap.extend_from_slice(&[0; 8]);
    let mut raw_ipx = vec![0u8; 12];
    raw_ipx.extend_from_slice(&[0x00, 0x30, 0xff, 0xff, 0x00, 0x1e, 0, 0, 0, 0, 0, 0]);
    let mut isis_l1_csnp = vec![0u8; 12];
    isis_l1_csnp.extend_from_slice(&[0x00, 0x30, 0xfe, 0xfe, 0x03, 0x83, 0x1b, 0x01, 0x00]);
    isis_l1_csnp.extend_from_slice(&[0x18, 0x01, 0x00, 0, 0]);
    let mut decnet = vec![0u8; 12];
    decnet.extend_from_slice(&[0x60, 0x03, 0, 0, 0, 0]);
    let cases: &[(&str, &[u8], bool)] = &[
        ("atalk", &atalk_snap, true),
        ("aarp", &atalk_snap, false),
        ("llc", &atalk_snap, true),
        ("llc u", &atalk_snap, true),
        ("llc i", &atalk_snap, false),
        ("ipx", &raw_ipx, true),
        ("llc", &raw_ipx, false),
        ("iso", &isis_l1_csnp, true),
        ("isis", &isis_l1_csnp, true),
        ("clnp", &isis_l1_csnp, false),
        ("l1", &isis_l1_csnp, true),
        ("l2", &isis_l1_csnp, false),
        ("csnp", &isis_l1_csnp, true),
        ("psnp", &isis_l1_csnp, false),
        ("snp", &isis_l1_csnp, true),
        ("decnet", &decnet, true),
        ("lat", &decnet, false),
        ("iso", &decnet, false),
    ];
    for (e, pkt, want) in cases {
        let f = Filter::compile(e, opts()).unwrap_or_else(|m| panic!("{m}"));
        assert_eq!(f.matches(pkt), *want, "{e:?}");
        let b = Bpf::compile(e, false, NETMASK).unwrap_or_else(|m| panic!("{m}"));
        assert_eq!(b.matches(pkt, pkt.len() as u32), *want, "libpcap {e:?}");
    }
}

// ------------------------------------------------------------ random expressions

fn arb_const() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("2147483647".to_string()),
        Just("2147483648".to_string()),
        Just("4294967295".to_string()),
        (0u32..70).prop_map(|n| n.to_string()),
        (0u32..0x10000).prop_map(|n| format!("0x{n:x}")),
    ]
}

fn arb_arith() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        arb_const(),
        Just("len".to_string()),
        (
            prop::sample::select(vec!["ether", "ip", "ip6", "tcp", "udp", "icmp", "arp", "icmp6"]),
            0u32..64,
            prop::sample::select(vec![1u8, 2, 4])
        )
            .prop_map(|(p, i, s)| format!("{p}[{i}:{s}]")),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (prop::sample::select(vec!["ether", "ip", "tcp"]), inner)
                .prop_map(|(p, a)| format!("{p}[{a}]")),
        ]
    })
}

fn arb_prim() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "ip",
            "ip6",
            "arp",
            "tcp",
            "udp",
            "icmp",
            "icmp6",
            "sctp",
            "vlan",
            "vlan 100",
            "mpls",
            "mpls 5",
            "ether broadcast",
            "ether multicast",
            "ip multicast",
            "ip6 multicast",
            "ip broadcast",
            "host 10.0.0.1",
            "src net 192.168.0.0/16",
            "dst host 224.0.0.5",
            "tcp port 80",
            "port 53",
            "udp src port 53",
            "portrange 0-6000",
            "net 10",
            "ip6 host 2001:db8::1",
            "ip6 net ff00::/8",
            "ip proto 17",
            "ip6 proto 6",
            "protochain 6",
            "ether proto 0x806",
            "less 64",
            "greater 100",
            "ether src 00:11:22:33:44:55",
            "tcp[tcpflags] & tcp-syn != 0",
            "icmp[icmptype] = icmp-echo",
            "atalk",
            "aarp",
            "ipx",
            "iso",
            "isis",
            "l1",
            "csnp",
            "stp",
            "netbeui",
            "llc",
            "llc u",
            "decnet",
            "iso proto 0x81",
            "ether proto 0xe0",
        ])
        .prop_map(|s| s.to_string()),
        (arb_arith(), prop::sample::select(vec!["=", "!=", "<", "<=", ">", ">="]), arb_arith())
            .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
    ]
}

fn arb_expr() -> impl Strategy<Value = String> {
    arb_prim().prop_recursive(4, 16, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(vec!["and", "or", "&&", "||"]), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|a| format!("not {a}")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_expressions_agree_with_libpcap(e in arb_expr(), seed in 1u64..u64::MAX) {
        let pkts = corpus(seed, 64);
        let o = differential(std::slice::from_ref(&e), &pkts, false, true);
        prop_assert!(o.mismatches.is_empty(), "{}", o.mismatches.join("\n"));
    }

    #[test]
    fn optimised_equals_unoptimised(e in arb_expr(), seed in 1u64..u64::MAX) {
        if let Ok(f) = Filter::compile(&e, opts()) {
            for (p, wl) in corpus(seed, 64) {
                let a = f.raw.matches(&p, wl);
                prop_assert_eq!(a, f.ir.matches(&p, wl), "{:?} on {:02x?}", e, p);
                prop_assert_eq!(a, f.matches_wire(&p, wl), "jit {:?} on {:02x?}", e, p);
            }
        }
    }

    #[test]
    fn parser_never_panics(s in "[ -~]{0,60}") {
        crate::fuzz_parse(s.as_bytes());
    }
}

// ------------------------------------------------------------ pfmatch vs libpcap

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    /// A flat pfmatch program selects the first clause whose filter libpcap
    /// accepts (a failing filter is a non-match in both), on every packet,
    /// through the JIT, the optimised and the unoptimised IR.
    #[test]
    fn pfmatch_agrees_with_sequential_libpcap(
        picks in prop::collection::vec(0usize..1000, 1..8),
        otherwise in any::<bool>(),
        seed in 1u64..u64::MAX,
    ) {
        let all = expressions();
        let mut clauses = Vec::new();
        for p in picks {
            let e = &all[p % all.len()];
            if e.is_empty() || Bpf::compile(e, false, NETMASK).is_err() {
                continue;
            }
            clauses.push(e.clone());
        }
        let mut src = String::from("match {\n");
        for (i, c) in clauses.iter().enumerate() {
            src.push_str(&format!("  {c} => h{i}   -- clause {i}\n"));
        }
        if otherwise {
            src.push_str("  otherwise => drop\n");
        }
        src.push('}');
        let d = crate::pfmatch::Dispatcher::compile(&src, opts()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(d.is_jitted());
        let bpfs: Vec<Bpf> = clauses.iter().map(|c| Bpf::compile(c, false, NETMASK).unwrap()).collect();
        for (p, wl) in corpus(seed, 200) {
            let mut want = bpfs.iter().position(|b| b.matches(&p, wl));
            if want.is_none() && otherwise {
                want = Some(clauses.len());
            }
            prop_assert_eq!(d.dispatch(&p, wl), want, "jit, {} on {:02x?}", src, p);
            prop_assert_eq!(d.dispatch_interp(&p, wl), want, "interp, {}", src);
            prop_assert_eq!(d.dispatch_raw(&p, wl), want, "raw, {}", src);
        }
    }

    #[test]
    fn fuzz_compile_agree_holds(e in arb_expr(), pkt in prop::collection::vec(any::<u8>(), 0..80)) {
        let mut data = e.into_bytes();
        data.push(0);
        data.extend(pkt);
        crate::fuzz_compile_agree(&data);
    }
}

/// The batch entry point gives the same verdicts as one call per packet,
/// over every corpus expression, snapped packets (wirelen > caplen),
/// damaged packets and batch sizes that are not multiples of the chunk.
#[test]
fn matches_batch_equals_per_packet() {
    let mut pkts = crate::gen::corpus_with(0x6a7c, 300, true);
    // Snapped copies: the same bytes cut short, the original wire length.
    let snapped: Vec<(Vec<u8>, u32)> =
        pkts.iter().take(100).map(|(p, wl)| (p[..p.len().min(30)].to_vec(), *wl)).collect();
    pkts.extend(snapped);
    pkts.push((Vec::new(), 0));
    let mut accepted = 0usize;
    for e in expressions() {
        let Ok(f) = Filter::compile(&e, opts()) else { continue };
        assert!(f.is_jitted(), "{e}");
        for n in [0, 1, 63, 64, 65, pkts.len()] {
            let batch = &pkts[..n];
            let mut out = vec![false; n];
            f.matches_batch_wire(batch, &mut out);
            for (i, (p, wl)) in batch.iter().enumerate() {
                assert_eq!(out[i], f.matches_wire(p, *wl), "{e:?} packet #{i}");
            }
            accepted += out.iter().filter(|x| **x).count();
        }
        // The `&[&[u8]]` form uses caplen as wirelen.
        let refs: Vec<&[u8]> = pkts.iter().map(|(p, _)| p.as_slice()).collect();
        let mut out = vec![true; refs.len()];
        f.matches_batch(&refs, &mut out);
        for (i, p) in refs.iter().enumerate() {
            assert_eq!(out[i], f.matches(p), "{e:?} packet #{i}");
        }
        // A shorter output slice bounds the work without panicking.
        let mut short = vec![false; 5];
        f.matches_batch(&refs, &mut short);
        assert_eq!(short, out[..5]);
    }
    // The comparison is not vacuous.
    assert!(accepted > 1000, "{accepted}");
}
