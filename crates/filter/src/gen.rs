//! Synthetic Ethernet traffic for tests and the benchmark: IPv4 (options,
//! fragments, AH), IPv6 (extension header chains), VLAN/QinQ tags, MPLS
//! stacks, ARP/RARP, 802.3/LLC frames, TCP with options, UDP, SCTP, ICMP,
//! ICMPv6; 802.3 frames with 802.2 LLC headers (every I/S/U control type,
//! SNAP for AppleTalk, AARP and IPX, STP, NetBEUI, IPX over 802.2 and
//! "raw" 802.3, OSI CLNP / ES-IS / IS-IS with every IS-IS PDU type);
//! Ethernet II frames of DEC, AppleTalk and IPX ethertypes; truncated
//! packets and snapped captures (caplen < wirelen).
//! Deterministic for a given seed.

/// Deterministic xorshift generator (tests must be reproducible).
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn pick<T: Copy + Default>(&mut self, xs: &[T]) -> T {
        xs.get((self.next_u64() % xs.len().max(1) as u64) as usize).copied().unwrap_or_default()
    }
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

const MACS: [[u8; 6]; 4] = [
    [0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    [0x01, 0x00, 0x5e, 0x00, 0x00, 0x05],
    [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
];
const V4: [[u8; 4]; 7] = [
    [10, 0, 0, 1],
    [10, 1, 2, 3],
    [192, 168, 1, 1],
    [192, 168, 1, 255],
    [224, 0, 0, 5],
    [255, 255, 255, 255],
    [8, 8, 8, 8],
];
const V6: [[u8; 16]; 4] = [
    [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 1],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
];
const PORTS: [u16; 8] = [80, 443, 53, 22, 0, 65535, 6000, 8080];

fn be16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_be_bytes());
}

fn l4(r: &mut Rng, proto: u8) -> Vec<u8> {
    let mut v = Vec::new();
    match proto {
        6 => {
            be16(&mut v, r.pick(&PORTS));
            be16(&mut v, r.pick(&PORTS));
            v.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
            let opt_words = r.pick(&[0u8, 0, 1, 3]);
            v.push((5 + opt_words) << 4);
            v.push(r.pick(&[0x02, 0x12, 0x10, 0x11, 0x04, 0x18, 0xc2, 0x00]));
            v.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
            for i in 0..opt_words {
                v.extend_from_slice(if i == 0 { &[2, 4, 5, 0xb4] } else { &[1, 1, 4, 2] });
            }
        }
        17 | 132 => {
            be16(&mut v, r.pick(&PORTS));
            be16(&mut v, r.pick(&PORTS));
            v.extend_from_slice(&[0, 8, 0, 0]);
            if proto == 132 {
                v.extend_from_slice(&[0, 0, 0, 0]);
            }
        }
        1 | 58 => {
            v.push(r.pick(&[0u8, 3, 8, 11, 128, 129, 135]));
            v.push(r.pick(&[0u8, 1]));
            v.extend_from_slice(&[0, 0, 0, 1, 0, 1]);
        }
        _ => {}
    }
    let extra = (r.next_u64() % 12) as usize;
    for _ in 0..extra {
        v.push(r.byte());
    }
    v
}

fn ipv4(r: &mut Rng) -> Vec<u8> {
    let proto = r.pick(&[6u8, 6, 17, 17, 1, 132, 2, 112, 103, 50, 51, 47]);
    let opts = r.pick(&[0usize, 0, 0, 1, 2]);
    let mut v = vec![0x45 + opts as u8, 0, 0, 0, 0, 1];
    let frag: u16 = r.pick(&[0, 0, 0, 0x2000, 0x0010, 0x4000, 0x2005]);
    be16(&mut v, frag);
    v.push(64);
    v.push(proto);
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&r.pick(&V4));
    v.extend_from_slice(&r.pick(&V4));
    for _ in 0..opts {
        v.extend_from_slice(&[1, 1, 1, 0]);
    }
    let mut body = if proto == 51 {
        // AH header: next header, length 1 (=> 12 bytes), ...
        let mut ah = vec![6, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
        ah.extend(l4(r, 6));
        ah
    } else {
        l4(r, proto)
    };
    v.append(&mut body);
    let tl = v.len() as u16;
    v[2..4].copy_from_slice(&tl.to_be_bytes());
    v
}

fn ipv6(r: &mut Rng) -> Vec<u8> {
    let proto = r.pick(&[6u8, 17, 58, 132, 6, 17]);
    // Optional extension headers.
    let exts: Vec<u8> = match r.next_u64() % 6 {
        0 => vec![0],
        1 => vec![44],
        2 => vec![0, 60],
        3 => vec![43, 44],
        4 => vec![51],
        _ => vec![],
    };
    let mut chain = exts.clone();
    chain.push(proto);
    let mut payload = Vec::new();
    for (i, e) in exts.iter().enumerate() {
        let next = chain[i + 1];
        match e {
            44 => payload.extend_from_slice(&[next, 0, 0, 0, 0, 0, 0, 1]),
            51 => payload.extend_from_slice(&[next, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2]),
            _ => payload.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]),
        }
    }
    payload.extend(l4(r, proto));
    let mut v = vec![0x60, 0, 0, 0];
    be16(&mut v, payload.len() as u16);
    v.push(chain[0]);
    v.push(64);
    v.extend_from_slice(&r.pick(&V6));
    v.extend_from_slice(&r.pick(&V6));
    v.extend(payload);
    v
}

/// An 802.2 LLC payload of an 802.3 frame (what follows the length field).
fn llc(r: &mut Rng) -> Vec<u8> {
    // I, S (RR, RNR, REJ, other) and U (UI, UI+P/F, UA, DISC, DM, SABME,
    // TEST, XID, FRMR, other) control bytes.
    let ctl = r.pick(&[
        0x00u8, 0x02, 0x01, 0x05, 0x09, 0x0d, 0x03, 0x13, 0x63, 0x43, 0x0f, 0x6f, 0xe3, 0xaf, 0x87,
        0x27, 0x73, 0xf3,
    ]);
    let mut v = Vec::new();
    match r.next_u64() % 10 {
        // SNAP: AppleTalk, AARP, IPX, IPv4, or an OUI/type that is close
        // to one of those but not equal.
        0 | 1 => {
            let (oui, ty): ([u8; 3], u16) = r.pick(&[
                ([0x08, 0x00, 0x07], 0x809b),
                ([0x00, 0x00, 0x00], 0x80f3),
                ([0x00, 0x00, 0x00], 0x8137),
                ([0x00, 0x00, 0x00], 0x0800),
                ([0x00, 0x00, 0x00], 0x809b),
                ([0x08, 0x00, 0x07], 0x80f3),
            ]);
            let c = if r.next_u64() % 3 == 0 { ctl } else { 0x03 };
            v.extend_from_slice(&[0xaa, r.pick(&[0xaa, 0xaa, 0xab]), c]);
            v.extend_from_slice(&oui);
            be16(&mut v, ty);
        }
        // OSI over LLC (fe fe 03): NLPID, then for IS-IS the common
        // header whose fifth byte is the PDU type.
        2..=5 => {
            let c = if r.next_u64() % 3 == 0 { ctl } else { 0x03 };
            v.extend_from_slice(&[0xfe, r.pick(&[0xfe, 0xfe, 0xfe, 0xaa]), c]);
            let nlpid = r.pick(&[0x81u8, 0x82, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x00]);
            v.push(nlpid);
            let pdu = r.pick(&[0x0fu8, 0x10, 0x11, 0x12, 0x14, 0x18, 0x19, 0x1a, 0x1b, 0x05]);
            // length indicator, version, id length, PDU type, ...
            v.extend_from_slice(&[0x1b, 0x01, 0x00, pdu, 0x01, 0x00]);
        }
        // "Raw" 802.3 NetWare: IPX header starting with checksum 0xffff.
        6 => v.extend_from_slice(&[0xff, 0xff, 0x00, 0x1e, 0x00, 0x04]),
        // Any SAP pair with a random control byte.
        _ => {
            let sap = r.pick(&[0x42u8, 0xf0, 0xe0, 0x06, 0x0a, 0xfe, 0xaa, 0xff]);
            v.extend_from_slice(&[sap, r.pick(&[sap, sap, 0x42, 0xe0]), ctl]);
        }
    }
    let extra = (r.next_u64() % 24) as usize;
    for _ in 0..extra {
        v.push(r.byte());
    }
    v
}

fn arp(r: &mut Rng) -> Vec<u8> {
    let mut v = vec![0, 1, 8, 0, 6, 4, 0, r.pick(&[1u8, 2])];
    v.extend_from_slice(&r.pick(&MACS));
    v.extend_from_slice(&r.pick(&V4));
    v.extend_from_slice(&r.pick(&MACS));
    v.extend_from_slice(&r.pick(&V4));
    v
}

/// One random Ethernet frame.
pub fn frame(r: &mut Rng) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&r.pick(&MACS));
    v.extend_from_slice(&r.pick(&MACS));
    // Tags.
    let tags = r.pick(&[0usize, 0, 0, 1, 1, 2]);
    for _ in 0..tags {
        be16(&mut v, r.pick(&[0x8100, 0x8100, 0x88a8, 0x9100]));
        be16(&mut v, r.pick(&[100u16, 200, 4095, 0x2064, 1]));
    }
    let kind = r.next_u64() % 13;
    match kind {
        0..=3 => {
            be16(&mut v, 0x0800);
            v.extend(ipv4(r));
        }
        4..=5 => {
            be16(&mut v, 0x86dd);
            v.extend(ipv6(r));
        }
        6 => {
            be16(&mut v, r.pick(&[0x0806, 0x8035]));
            v.extend(arp(r));
        }
        7 => {
            be16(&mut v, 0x8847);
            let n = r.pick(&[1usize, 2, 3]);
            for i in 0..n {
                let label: u32 = r.pick(&[5u32, 100, 0xfffff, 16]);
                let bos = u32::from(i + 1 == n);
                v.extend_from_slice(&((label << 12) | (bos << 8) | 64).to_be_bytes());
            }
            if r.next_u64() % 2 == 0 {
                v.extend(ipv4(r));
            } else {
                v.extend(ipv6(r));
            }
        }
        8 => {
            // 802.3 length + LLC
            be16(&mut v, r.pick(&[46u16, 100, 1500]));
            let sap = r.pick(&[0xaa, 0x42, 0xfe, 0x0a, 0x06, 0xf0]);
            v.extend_from_slice(&[sap, r.pick(&[sap, 0xaa]), 3, 0, 0, 0, 8, 0]);
        }
        9 | 10 => {
            // 802.3 length (including the 1500/1501 boundary) + LLC
            be16(&mut v, r.pick(&[38u16, 46, 100, 1500, 1501, 0]));
            v.extend(llc(r));
        }
        11 => {
            // Ethernet II with DEC, AppleTalk, IPX and loopback types.
            be16(
                &mut v,
                r.pick(&[
                    0x809bu16, 0x80f3, 0x8137, 0x6001, 0x6002, 0x6003, 0x6004, 0x6007, 0x9000,
                    0x6005,
                ]),
            );
            let n = (r.next_u64() % 40) as usize;
            for _ in 0..n {
                v.push(r.byte());
            }
        }
        _ => {
            be16(&mut v, r.pick(&[0x0800, 0x86dd, 0x1234]));
            let n = (r.next_u64() % 60) as usize;
            for _ in 0..n {
                v.push(r.byte());
            }
        }
    }
    v
}

/// A capture: (captured bytes, wire length).
pub fn corpus(seed: u64, n: usize) -> Vec<(Vec<u8>, u32)> {
    corpus_with(seed, n, true)
}

/// Like [`corpus`]; without `damaged`, no truncated or snapped packets.
pub fn corpus_with(seed: u64, n: usize, damaged: bool) -> Vec<(Vec<u8>, u32)> {
    let mut r = Rng(seed);
    let mut out = Vec::new();
    for i in 0..n {
        let f = frame(&mut r);
        let wl = f.len() as u32;
        match if damaged { i % 8 } else { 0 } {
            // truncated packets (header claims more than there is)
            6 => {
                let cut = (r.next_u64() as usize) % (f.len() + 1);
                let f2 = f[..cut].to_vec();
                let l = f2.len() as u32;
                out.push((f2, l));
            }
            // snapped: caplen < wirelen
            7 => {
                let cut = (r.next_u64() as usize) % (f.len() + 1);
                out.push((f[..cut].to_vec(), wl + (r.next_u64() % 3) as u32 * 100));
            }
            _ => out.push((f, wl)),
        }
    }
    // edge cases
    for l in 0..if damaged { 20 } else { 0 } {
        let mut f = vec![0xffu8; l];
        if l > 13 {
            f[12] = 8;
            f[13] = 0;
        }
        out.push((f, l as u32));
    }
    out
}
