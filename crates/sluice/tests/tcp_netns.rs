//! TCP and UDP through `sluice run` as a host's stack sends them: a veth
//! hands the switch's AF_PACKET port the sender's super-frames (GSO, up to
//! 64 KiB), which the port cuts into wire-sized segments
//! (`sluice_ports::gso`). 8 MiB of TCP go from one host to the other
//! through a plain forwarding rule and must arrive whole and in order; the
//! rule's packet count shows they crossed as segments. A UDP socket with
//! `UDP_SEGMENT` sends one 10 000-byte buffer, which must arrive as ten
//! 1000-byte datagrams.
//!
//! Needs root, `ip` and `ping`; namespaces and the switch are removed by guards.

mod netlab;

use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

use netlab::{n_packets, ok, tcp_transfer, Lab, Proc, Scratch};

const BYTES: usize = 8 << 20;

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 9)) as u8
}

/// Two hosts (10.OCTET.0.1/2) and a secure switch forwarding port 1 to 2
/// and back, pinging; the scratch dir (keep it), lab, switch and ctl
/// target.
fn forwarding(octet: u8) -> (Scratch, Lab, Proc, String) {
    netlab::need_root_and(&["ip", "ping"]);
    let dir = Scratch::new("fwd");
    let lab = Lab::new(2, octet);
    let (sw, t) = lab.start_secure_switch(&dir);
    ok(&t, &["add-flow", "priority=1,in_port=1,actions=output:2"]);
    ok(&t, &["add-flow", "priority=1,in_port=2,actions=output:1"]);
    assert!(lab.ping_ok_within(0, 1, Duration::from_secs(10)), "no ping through the switch");
    (dir, lab, sw, t)
}

#[test]
fn a_bulk_transfer_crosses_as_segments() {
    let (_dir, lab, mut sw, t) = forwarding(75);

    let data: Vec<u8> = (0..BYTES).map(pattern).collect();
    let got = tcp_transfer(&lab.h[0], &lab.h[1], SocketAddrV4::new(lab.ipv4(1), 5001), &data);
    assert_eq!(got.len(), BYTES, "every byte arrived");
    assert!(got == data, "in order and unchanged");

    // At least one frame per 1500 bytes went through the rule (a super-
    // frame forwarded whole would have been dropped by the output).
    let flows = ok(&t, &["dump-flows"]).stdout;
    let n = n_packets(&flows, &["in_port=1"]);
    assert!(n as usize >= BYTES / 1500, "{n} frames for {BYTES} bytes:\n{flows}");
    sw.assert_running();
}

/// The sender, in Python (std has no `UDP_SEGMENT`; 103 at level
/// `SOL_UDP` 17, `<linux/udp.h>`): one `sendto` of the pattern's first
/// 10 000 bytes, cut by the kernel into 1000-byte datagrams — or, on a
/// veth, handed to the switch as one super-frame.
const UDP_GSO_SENDER: &str = "import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(17, 103, 1000)
data = bytes(((i * 7) ^ (i >> 9)) & 0xff for i in range(10000))
assert s.sendto(data, (sys.argv[1], int(sys.argv[2]))) == 10000
";

#[test]
fn a_udp_segment_send_arrives_as_datagrams() {
    let (_dir, lab, mut sw, _) = forwarding(76);

    let to = SocketAddrV4::new(lab.ipv4(1), 5002);
    let rx = lab.h[1].enter(|| UdpSocket::bind(to)).expect("bind");
    rx.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let out = lab.h[0]
        .exec(&["/usr/bin/python3", "-c", UDP_GSO_SENDER, &lab.ip(1), "5002"])
        .expect("run python3");
    assert!(out.status.success(), "sender: {}", String::from_utf8_lossy(&out.stderr));
    let data: Vec<u8> = (0..10_000).map(pattern).collect();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    for i in 0..10 {
        let n = rx.recv(&mut buf).unwrap_or_else(|e| panic!("datagram {i}: {e}"));
        assert_eq!(n, 1000, "datagram {i}");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got == data, "the datagrams carry the buffer in order");
    sw.assert_running();
}
