//! The datapath in-process against real veth ports in namespaces: the
//! PORT_STATUS messages the agent would forward (ADD, MODIFY on link
//! down/up, DELETE when the interface goes, ADD when it comes back),
//! PACKET_IN for a table miss, PACKET_OUT to a port, and forwarding by
//! flows. Needs root (network namespaces) and `ip` (iproute2,
//! `scripts/install-deps`): without them the tests fail, they do not skip.
//! Namespaces are removed by Drop guards (with the veths inside them);
//! every wait is bounded.

use std::time::{Duration, Instant};

use sluice_agent::Switch;
use sluice_datapath::config::{DatapathConfig, PortConfig};
use sluice_datapath::ports::testutil::{
    is_root, test_frame, test_frame_seq, unique_name, NetNs, RawSocket,
};
use sluice_datapath::ports::PortSpec;
use sluice_datapath::{Datapath, DatapathSwitch};
use sluice_ofp::action::Action;
use sluice_ofp::consts::OFP_NO_BUFFER;
use sluice_ofp::message::{flow_mod_command, port_reason, Message, PacketOut, PortStatus};
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::port::state;

struct Lab {
    hosts: Vec<NetNs>,
    sw: NetNs,
    sw_if: Vec<String>,
    host_if: Vec<String>,
}

impl Lab {
    fn new(n: usize) -> Lab {
        let sw = NetNs::new("sw").expect("switch namespace");
        let mut lab = Lab { hosts: Vec::new(), sw, sw_if: Vec::new(), host_if: Vec::new() };
        for i in 0..n {
            lab.hosts.push(NetNs::new("h").expect("host namespace"));
            lab.sw_if.push(unique_name("s"));
            lab.host_if.push(unique_name("e"));
            lab.link(i);
        }
        lab
    }

    fn link(&self, i: usize) {
        self.sw
            .exec(&[
                "ip",
                "link",
                "add",
                &self.sw_if[i],
                "type",
                "veth",
                "peer",
                "name",
                &self.host_if[i],
                "netns",
                self.hosts[i].name(),
            ])
            .expect("veth");
        self.sw.exec(&["ip", "link", "set", &self.sw_if[i], "up"]).expect("up");
        self.hosts[i].exec(&["ip", "link", "set", &self.host_if[i], "up"]).expect("up");
    }

    fn start(&self, workers: usize) -> Datapath {
        let ports = self
            .sw_if
            .iter()
            .enumerate()
            .map(|(i, n)| PortConfig {
                spec: PortSpec::parse(&format!("afpacket:{n}")).unwrap(),
                port_no: i as u32 + 1,
                reopen: true,
            })
            .collect();
        Datapath::start(DatapathConfig {
            ports,
            netns: Some(self.sw.name().to_string()),
            workers,
            ..Default::default()
        })
        .expect("datapath")
    }

    fn raw(&self, i: usize) -> RawSocket {
        let name = self.host_if[i].clone();
        self.hosts[i].enter(move || RawSocket::open(&name)).expect("raw socket")
    }
}

/// Waits (bounded) for a PORT_STATUS about `port` matching `pred`.
fn wait_status(
    sw: &mut DatapathSwitch,
    port: u32,
    pred: impl Fn(&PortStatus) -> bool,
) -> PortStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        for m in sw.take_async() {
            if let Message::PortStatus(ps) = m {
                if ps.desc.port_no == port && pred(&ps) {
                    return ps;
                }
                seen.push(ps);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no matching PORT_STATUS for port {port}; saw {seen:?}");
}

fn flow(sw: &DatapathSwitch, text: &str) {
    let spec = parse_flow(text, Usage::Add).expect("flow text");
    let r = sw.apply(1, &Message::FlowMod(spec.to_flow_mod(flow_mod_command::ADD)));
    assert!(r.is_empty(), "flow-mod refused: {r:?}");
}

/// Receives until a test frame with `seq` arrives (bounded).
fn expect_frame(sock: &RawSocket, seq: u32) -> Vec<u8> {
    let mut buf = [0u8; 2048];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Some(n) = sock.recv(&mut buf, Duration::from_millis(200)).expect("recv") {
            let f = &buf[..n.min(buf.len())];
            if test_frame_seq(f) == Some(seq) {
                return f.to_vec();
            }
        }
    }
    panic!("frame {seq} never arrived");
}

#[test]
fn port_status_follows_links_and_removal() {
    assert!(is_root(), "needs root (network namespaces)");
    let lab = Lab::new(1);
    let dp = lab.start(1);
    let mut sw = dp.switch();
    let add = wait_status(&mut sw, 1, |p| p.reason == port_reason::ADD);
    assert_eq!(add.desc.name, lab.sw_if[0]);
    assert_eq!(add.desc.state & state::LINK_DOWN, 0);

    lab.hosts[0].exec(&["ip", "link", "set", &lab.host_if[0], "down"]).unwrap();
    let down = wait_status(&mut sw, 1, |p| p.reason == port_reason::MODIFY);
    assert_ne!(down.desc.state & state::LINK_DOWN, 0, "{down:?}");
    assert!(!dp.ports()[0].live);

    lab.hosts[0].exec(&["ip", "link", "set", &lab.host_if[0], "up"]).unwrap();
    let up = wait_status(&mut sw, 1, |p| p.reason == port_reason::MODIFY);
    assert_eq!(up.desc.state & state::LINK_DOWN, 0, "{up:?}");

    lab.sw.exec(&["ip", "link", "del", &lab.sw_if[0]]).unwrap();
    wait_status(&mut sw, 1, |p| p.reason == port_reason::DELETE);
    assert!(dp.ports().is_empty());

    lab.link(0);
    let again = wait_status(&mut sw, 1, |p| p.reason == port_reason::ADD);
    assert_eq!(again.desc.name, lab.sw_if[0]);
    assert_eq!(dp.ports().len(), 1);
}

#[test]
fn packet_in_packet_out_and_flows() {
    assert!(is_root(), "needs root (network namespaces)");
    let lab = Lab::new(2);
    let dp = lab.start(2);
    let mut sw = dp.switch();
    wait_status(&mut sw, 2, |p| p.reason == port_reason::ADD);
    let (h1, h2) = (lab.raw(0), lab.raw(1));
    let (a, b) = ([0x02, 0, 0, 0, 0, 0xa1], [0x02, 0, 0, 0, 0, 0xb2]);

    // Table miss to the controller: a PACKET_IN with the whole frame.
    flow(&sw, "priority=0,actions=controller:65535");
    let f = test_frame(b, a, 7, 100);
    h1.send(&f).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let pi = loop {
        let got = sw.take_async().into_iter().find_map(|m| match m {
            Message::PacketIn(pi) if test_frame_seq(&pi.data) == Some(7) => Some(pi),
            _ => None,
        });
        if let Some(pi) = got {
            break pi;
        }
        assert!(Instant::now() < deadline, "no PACKET_IN");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(pi.data, f);
    assert_eq!(pi.buffer_id, OFP_NO_BUFFER);

    // PACKET_OUT to port 2 reaches host 2.
    let f = test_frame(b, a, 8, 80);
    let r = sw.apply(
        2,
        &Message::PacketOut(PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port: sluice_ofp::consts::port_no::CONTROLLER,
            actions: vec![Action::Output { port: 2, max_len: 0 }],
            data: f.clone(),
        }),
    );
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(expect_frame(&h2, 8), f);

    // A flow forwards a burst 1 -> 2 in order, counted per port.
    flow(&sw, "priority=10,in_port=1,actions=output:2");
    // Lengths vary, so a frame cut or padded on the way is seen.
    let sent: Vec<Vec<u8>> =
        (100..164).map(|seq| test_frame(b, a, seq, 60 + (seq as usize % 7) * 13)).collect();
    for f in &sent {
        h1.send(f).unwrap();
    }
    for (seq, f) in (100..164).zip(&sent) {
        assert_eq!(&expect_frame(&h2, seq), f, "frame {seq} changed on the way");
    }
    let p1 = dp.ports().into_iter().find(|p| p.port_no == 1).unwrap();
    assert!(p1.counters.rx_packets >= 65, "{p1:?}");
    let st = dp.stats();
    assert!(st.packets >= 65 && st.bursts >= 1, "{st:?}");
    dp.shutdown();
}
