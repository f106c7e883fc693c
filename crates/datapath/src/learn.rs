//! Fail-standalone forwarding: a plain MAC-learning Ethernet switch.
//!
//! What? OpenFlow 1.3.5 §6.3.6 lets a switch whose controllers are all gone
//! "act as a legacy Ethernet switch" (fail standalone mode). While that mode
//! is active the workers bypass the flow tables and ask [`MacTable::decide`]
//! where each frame goes:
//! - the source MAC (if unicast) is learned on the ingress port;
//! - a broadcast/multicast destination, or an unknown one, is flooded to
//!   every live port except the ingress port;
//! - a known destination goes to its port, unless that is the ingress port
//!   (the frame is already on the right segment: dropped).
//!
//! Bounds: the table holds at most `capacity` addresses; when full, expired
//! entries are purged and, if none expired, the least recently seen entry is
//! evicted (a linear scan, only on insertion into a full table). Entries age
//! out after `aging_ns` without traffic from that address. Nothing here reads
//! a clock: the caller passes `now_ns` (once per burst).

use std::collections::HashMap;

/// Where one frame goes in standalone mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// To this port only.
    Port(u32),
    /// To every live port except the ingress port.
    Flood,
    /// Nowhere (runt frame, or destination behind the ingress port).
    Drop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    port: u32,
    seen_ns: u64,
}

/// The learned addresses. See the module docs.
#[derive(Debug)]
pub struct MacTable {
    map: HashMap<[u8; 6], Entry>,
    capacity: usize,
    aging_ns: u64,
}

fn is_multicast(mac: &[u8; 6]) -> bool {
    mac[0] & 1 != 0
}

impl MacTable {
    /// An empty table of at most `capacity` (≥ 1) addresses that forgets an
    /// address `aging_ns` after it was last seen.
    pub fn new(capacity: usize, aging_ns: u64) -> MacTable {
        MacTable { map: HashMap::new(), capacity: capacity.max(1), aging_ns }
    }

    /// Number of learned addresses (expired ones included until purged).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when nothing is learned.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Forgets everything (used when standalone mode is entered again).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Forgets the addresses learned on `port` (it went down or away).
    pub fn forget_port(&mut self, port: u32) {
        self.map.retain(|_, e| e.port != port);
    }

    /// The port `mac` was last seen on, if that was less than the aging time
    /// ago.
    pub fn lookup(&self, mac: &[u8; 6], now_ns: u64) -> Option<u32> {
        self.map
            .get(mac)
            .filter(|e| now_ns.saturating_sub(e.seen_ns) < self.aging_ns)
            .map(|e| e.port)
    }

    /// Records that `mac` (unicast only) was seen on `port` at `now_ns`.
    pub fn learn(&mut self, mac: [u8; 6], port: u32, now_ns: u64) {
        if is_multicast(&mac) || mac == [0; 6] {
            return;
        }
        if let Some(e) = self.map.get_mut(&mac) {
            *e = Entry { port, seen_ns: now_ns };
            return;
        }
        if self.map.len() >= self.capacity {
            let aging = self.aging_ns;
            self.map.retain(|_, e| now_ns.saturating_sub(e.seen_ns) < aging);
        }
        if self.map.len() >= self.capacity {
            let oldest = self.map.iter().min_by_key(|(_, e)| e.seen_ns).map(|(m, _)| *m);
            if let Some(m) = oldest {
                self.map.remove(&m);
            }
        }
        self.map.insert(mac, Entry { port, seen_ns: now_ns });
    }

    /// Learns from `frame` (received on `in_port`) and says where it goes.
    pub fn decide(&mut self, in_port: u32, frame: &[u8], now_ns: u64) -> Forward {
        let (Some(dst), Some(src)) = (frame.get(0..6), frame.get(6..12)) else {
            return Forward::Drop;
        };
        if frame.len() < 14 {
            return Forward::Drop;
        }
        let mut d = [0u8; 6];
        d.copy_from_slice(dst);
        let mut s = [0u8; 6];
        s.copy_from_slice(src);
        self.learn(s, in_port, now_ns);
        if is_multicast(&d) {
            return Forward::Flood;
        }
        match self.lookup(&d, now_ns) {
            Some(p) if p == in_port => Forward::Drop,
            Some(p) => Forward::Port(p),
            None => Forward::Flood,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
    const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
    const BCAST: [u8; 6] = [0xff; 6];

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x06]); // ARP
        f.resize(60, 0);
        f
    }

    #[test]
    fn arp_exchange_learns_both_sides() {
        let mut t = MacTable::new(16, 1_000);
        // A broadcasts an ARP request on port 1: flooded, A learned.
        assert_eq!(t.decide(1, &frame(BCAST, A), 0), Forward::Flood);
        // B answers on port 2 to A: goes to port 1, B learned.
        assert_eq!(t.decide(2, &frame(A, B), 1), Forward::Port(1));
        // A now reaches B directly.
        assert_eq!(t.decide(1, &frame(B, A), 2), Forward::Port(2));
    }

    #[test]
    fn literal_bytes_and_runts() {
        let mut t = MacTable::new(16, 1_000);
        let f =
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x06];
        assert_eq!(t.decide(3, &f, 0), Forward::Flood);
        assert_eq!(t.lookup(&A, 0), Some(3));
        assert_eq!(t.decide(3, &f[..13], 0), Forward::Drop);
        assert_eq!(t.decide(3, &[], 0), Forward::Drop);
    }

    #[test]
    fn unknown_flooded_same_port_dropped_multicast_not_learned() {
        let mut t = MacTable::new(16, 1_000);
        assert_eq!(t.decide(1, &frame(B, A), 0), Forward::Flood);
        // Another host behind port 1 talks to A: A is behind port 1 too.
        assert_eq!(t.decide(1, &frame(A, B), 0), Forward::Drop);
        // A multicast source is never learned.
        let mut m = BCAST;
        m[5] = 1;
        t.learn(m, 4, 0);
        assert_eq!(t.lookup(&m, 0), None);
        t.learn([0; 6], 4, 0);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn entries_age_out_and_move() {
        let mut t = MacTable::new(16, 100);
        t.learn(A, 1, 0);
        assert_eq!(t.lookup(&A, 99), Some(1));
        assert_eq!(t.lookup(&A, 100), None);
        t.learn(A, 2, 150);
        assert_eq!(t.lookup(&A, 160), Some(2));
        t.forget_port(2);
        assert!(t.is_empty());
    }

    #[test]
    fn capacity_is_a_hard_bound() {
        let mut t = MacTable::new(3, 1_000_000);
        for i in 0..10u8 {
            t.learn([0x02, 0, 0, 0, 1, i], 1, u64::from(i));
            assert!(t.len() <= 3);
        }
        // The three most recent survive.
        assert_eq!(t.lookup(&[0x02, 0, 0, 0, 1, 9], 10), Some(1));
        assert_eq!(t.lookup(&[0x02, 0, 0, 0, 1, 7], 10), Some(1));
        assert_eq!(t.lookup(&[0x02, 0, 0, 0, 1, 6], 10), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_stays_bounded(
            frames in proptest::collection::vec(
                (1u32..5, proptest::collection::vec(proptest::num::u8::ANY, 0..20)), 0..100),
        ) {
            let mut t = MacTable::new(4, 50);
            for (i, (port, f)) in frames.iter().enumerate() {
                let d = t.decide(*port, f, i as u64);
                if let Forward::Port(p) = d {
                    proptest::prop_assert_ne!(p, *port);
                }
                proptest::prop_assert!(t.len() <= 4);
            }
        }
    }
}
