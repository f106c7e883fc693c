//! A front end whose key is its header vector, as P4's will be: its own
//! parser fills the key ([`Parse`]), its actions compute on the key
//! ([`Op::Key`]), a branch tests a bit one of them computed. Every cache
//! mode must forward as a direct model of the program does; in
//! particular the megaflow cache must hold the bits a key program read,
//! or packets that differ only there would share an entry.

use std::sync::Arc;

use sluice_core::graph::{Graph, KeyTest, Next, Node};
use sluice_core::guard::GuardSet;
use sluice_core::keyop::{BinOp, Insn, KeyProg, Slot};
use sluice_core::op::{EntryOps, Op};
use sluice_core::pkt::{Parse, Pkt};
use sluice_core::tally::{Shard, Tally};
use sluice_core::walk::{self, CacheMode, Counting, Flow, Frontend, Table, Tx, Worker};
use sluice_packet::key::{FlowKey, FlowMask};
use sluice_packet::parse::{Meta, ParseInfo};

/// Word 0: the frame's first 8 bytes; word 1: the next 8; word 2: the
/// computed flag (bit 0); word 3: a copy the second table's action makes.
#[derive(Debug)]
struct Words;

impl Parse for Words {
    fn parse(&self, data: &[u8], _meta: &Meta, key: &mut FlowKey, info: &mut ParseInfo) -> usize {
        *key = FlowKey::ZERO;
        for (w, chunk) in key.words.iter_mut().zip(data.chunks(8)).take(2) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_be_bytes(b);
        }
        *info = ParseInfo::default();
        16
    }
}

const BYTE0: Slot = Slot { word: 0, shift: 56, width: 8 };
const FLAG: Slot = Slot { word: 2, shift: 0, width: 1 };
const WORD1: Slot = Slot { word: 1, shift: 0, width: 64 };
const COPY: Slot = Slot { word: 3, shift: 0, width: 64 };

struct Rule {
    mask: FlowMask,
    value: FlowKey,
    ops: Arc<EntryOps>,
    stats: Tally,
}

impl walk::Entry for Rule {
    fn ops(&self) -> &Arc<EntryOps> {
        &self.ops
    }
    fn guards(&self) -> &GuardSet {
        static NONE: std::sync::LazyLock<GuardSet> = std::sync::LazyLock::new(GuardSet::default);
        &NONE
    }
    fn counters(&self) -> &Tally {
        &self.stats
    }
    fn counting(&self) -> Counting {
        Counting::ALL
    }
}

struct Tab {
    rules: Vec<Rule>,
    stats: Arc<Tally>,
}

impl Tab {
    fn scan(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        for (i, r) in self.rules.iter().enumerate() {
            for (w, m) in wc.words.iter_mut().zip(r.mask.words) {
                *w |= m;
            }
            if key.matches(&r.mask, &r.value) {
                return Some(i);
            }
        }
        None
    }
}

impl Table for Tab {
    type Entry = Rule;
    fn counters(&self) -> &Arc<Tally> {
        &self.stats
    }
    fn entries(&self) -> &[Rule] {
        &self.rules
    }
    fn has_guards(&self) -> bool {
        false
    }
    fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        self.scan(key, wc)
    }
    fn lookup_scan(&self, key: &FlowKey) -> Option<usize> {
        let mut wc = FlowMask::ZERO;
        self.scan(key, &mut wc)
    }
    fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        self.scan(key, wc)
    }
    fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        _indexed: bool,
        _accept: &mut dyn FnMut(usize) -> bool,
    ) -> Option<usize> {
        self.scan(key, wc)
    }
}

struct Front {
    graph: Graph,
    tables: Vec<Tab>,
    mode: CacheMode,
    parser: Arc<dyn Parse>,
}

/// What the front end's `forward` saw: the port and the key's words 0–3.
type Sent = Vec<(u32, [u64; 4])>;

impl Frontend for Front {
    type Table = Tab;
    type Ctx = ();
    type Ext = Sent;
    type Rule = ();
    fn graph(&self) -> &Graph {
        &self.graph
    }
    fn table(&self, id: u8) -> Option<&Tab> {
        self.tables.get(usize::from(id))
    }
    fn generation(&self) -> u64 {
        1
    }
    fn cache_mode(&self) -> CacheMode {
        self.mode
    }
    fn indexed(&self) -> bool {
        true
    }
    fn parser(&self) -> Option<&Arc<dyn Parse>> {
        Some(&self.parser)
    }
    fn ctx(&self, _table: u8, _e: &Rule) -> Self::Ctx {}
    fn meter(&self, _w: &mut Worker<Self>, _id: u32, _pkt: &mut Pkt) -> Flow {
        Flow::Continue
    }
    fn forward(
        &self,
        w: &mut Worker<Self>,
        op: &Op,
        pkt: &mut Pkt,
        _ctx: (),
        _tx: &mut dyn Tx,
    ) -> Flow {
        if let Op::Output { port, .. } = op {
            let k = &pkt.key.words;
            w.ext.push((*port, [k[0], k[1], k[2], k[3]]));
        }
        Flow::Continue
    }
    fn ttl_expired(&self, _w: &mut Worker<Self>, _pkt: &Pkt, _ctx: ()) {}
}

fn entry(mask: FlowMask, value: FlowKey, apply: Vec<Op>) -> Rule {
    Rule {
        mask,
        value,
        ops: Arc::new(EntryOps { apply: apply.into_boxed_slice(), ..EntryOps::default() }),
        stats: Tally::new(3, 2),
    }
}

/// Table 0 (one catch-all entry): `flag = byte0 > 0x80`. Then a branch
/// on the flag: set → table 1 (exact on word 1's top byte: copy word 1
/// to word 3 and output to port 1 or 2; miss → end); clear → table 2
/// (catch-all: output to port 9).
fn front(mode: CacheMode) -> Front {
    let flag = KeyProg::new(vec![
        Insn::Load { dst: 0, from: BYTE0 },
        Insn::Const { dst: 1, value: 0x80 },
        Insn::Bin { op: BinOp::Lt, dst: 2, a: 1, b: 0, width: 8 },
        Insn::Store { src: 2, to: FLAG },
    ])
    .unwrap();
    let copy =
        KeyProg::new(vec![Insn::Load { dst: 0, from: WORD1 }, Insn::Store { src: 0, to: COPY }])
            .unwrap();
    let out = |port| Op::Output { port, max_len: 0 };
    let t0 = vec![entry(FlowMask::ZERO, FlowKey::ZERO, vec![Op::Key(Arc::new(flag))])];
    let mut m1 = FlowMask::ZERO;
    m1.words[1] = 0xff << 56;
    let mut t1 = Vec::new();
    for (top, port) in [(0x11u64, 1), (0x22, 2)] {
        let mut v = FlowKey::ZERO;
        v.words[1] = top << 56;
        t1.push(entry(m1, v, vec![Op::Key(Arc::new(copy.clone())), out(port)]));
    }
    let t2 = vec![entry(FlowMask::ZERO, FlowKey::ZERO, vec![out(9)])];
    let tables = [t0, t1, t2]
        .into_iter()
        .map(|rules| Tab { rules, stats: Arc::new(Tally::new(2, 2)) })
        .collect();
    let graph = Graph::new(
        vec![
            Node::Apply { table: 0, next: Next::To(1) },
            Node::Branch {
                test: KeyTest { word: FLAG.word, mask: FLAG.mask(), value: FLAG.mask() },
                then: 2,
                otherwise: 3,
            },
            Node::Apply { table: 1, next: Next::To(4) },
            Node::Apply { table: 2, next: Next::To(4) },
            Node::End,
        ],
        0,
    )
    .unwrap();
    Front { graph, tables, mode, parser: Arc::new(Words) }
}

/// The program, directly.
fn model(frame: &[u8]) -> Sent {
    let mut k = FlowKey::ZERO;
    Words.parse(frame, &Meta::default(), &mut k, &mut ParseInfo::default());
    let flag = u64::from(BYTE0.get(&k) > 0x80);
    FLAG.set(&mut k, flag);
    if flag == 0 {
        return vec![(9, [k.words[0], k.words[1], k.words[2], k.words[3]])];
    }
    let port = match k.words[1] >> 56 {
        0x11 => 1,
        0x22 => 2,
        _ => return vec![],
    };
    k.words[3] = k.words[1];
    vec![(port, [k.words[0], k.words[1], k.words[2], k.words[3]])]
}

/// Frames that differ in the byte the flag reads and in the byte table 1
/// matches, each sent several times so caches hit.
fn frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for round in 0..3u8 {
        for b0 in [0x00u8, 0x7f, 0x80, 0x81, 0xff] {
            for top in [0x11u8, 0x22, 0x33] {
                let mut f = vec![0u8; 16];
                f[0] = b0;
                f[8] = top;
                f[15] = round;
                v.push(f);
            }
        }
    }
    v
}

#[test]
fn every_cache_mode_forwards_as_the_program_says() {
    for mode in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On, CacheMode::Auto] {
        let f = front(mode);
        let mut w = Worker::new(Shard::OWNER, Vec::new());
        let mut tx = |_: u32, _: Option<u32>, _: &[u8]| {};
        for frame in frames() {
            let mut pkt = Pkt::new();
            pkt.set_parser(f.parser());
            assert!(pkt.load(&frame, Meta::default()));
            walk::run(&f, &mut w, &mut pkt, &mut tx);
            let got = std::mem::take(&mut w.ext);
            assert_eq!(got, model(&frame), "{mode:?} on {frame:02x?}");
        }
        if matches!(mode, CacheMode::Megaflow | CacheMode::On) {
            // The rounds repeat every flow: later rounds are served by the
            // caches, so the comparison above covered their hits.
            let s = w.cache_stats();
            assert!(s.megaflow_hits + s.exact_hits >= 15, "{s:?}");
            assert!(s.installs > 0, "{s:?}");
        }
    }
}

#[test]
fn bursts_forward_as_the_program_says() {
    for mode in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On, CacheMode::Auto] {
        let f = front(mode);
        let mut w = Worker::new(Shard::OWNER, Vec::new());
        let mut tx = |_: u32, _: Option<u32>, _: &[u8]| {};
        let frames = frames();
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        walk::burst(&f, &mut w, Meta::default(), &refs, &mut tx);
        let want: Sent = frames.iter().flat_map(|fr| model(fr)).collect();
        assert_eq!(w.ext, want, "{mode:?}");
    }
}

/// Frames whose keys (word 0: the frame's first 8 bytes) fall in exact
/// slots 0 and 1 only, so they evict each other there all the time.
fn colliding_frames(n: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut x = 0u64;
    while v.len() < n {
        x += 1;
        let mut k = FlowKey::ZERO;
        k.words[0] = x;
        if sluice_core::cache::exact_slot(&k) < 2 {
            v.push(x.to_be_bytes().to_vec());
        }
    }
    v
}

/// A staged burst resolves every packet before running any. A megaflow
/// hit in it copies its entry into the exact cache, which may push out
/// the entry an earlier packet of the burst resolved to; with the
/// megaflow that also held that entry's program gone (the megaflow cache
/// full and emptied), the program would be freed before that packet ran,
/// and a miss running ahead of it could reuse its slot for another
/// flow's program: the packet would leave on the other flow's port. Every
/// flow here has a port of its own, the exact cache is two slots for them
/// and the megaflow cache holds four entries, so that happens often
/// unless staging holds what it resolved. (Found by `sluice bench
/// --cases twotable/on --packets 10M`: 221 frames of 10 million on the
/// wrong port once the megaflow cache had filled and been emptied. Here
/// `Auto`, whose bursts in `Off` and `Megaflow` leave exact entries whose
/// megaflows are gone, shows it within 100 bursts; `On` alone did not
/// within 40 000.)
#[test]
fn a_burst_runs_what_it_resolved_while_the_caches_churn() {
    let frames = colliding_frames(48);
    let ports: std::collections::HashMap<u64, u32> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (u64::from_be_bytes(f[..8].try_into().unwrap()), 100 + i as u32))
        .collect();
    let mut m = FlowMask::ZERO;
    m.words[0] = u64::MAX;
    let graph = || Graph::new(vec![Node::Apply { table: 0, next: Next::To(1) }, Node::End], 0);
    for mode in [CacheMode::Auto, CacheMode::On, CacheMode::Megaflow] {
        let mut rules = Vec::new();
        for (&x, &port) in &ports {
            let mut v = FlowKey::ZERO;
            v.words[0] = x;
            rules.push(entry(m, v, vec![Op::Output { port, max_len: 0 }]));
        }
        let tables = vec![Tab { rules, stats: Arc::new(Tally::new(2, 2)) }];
        let f = Front { graph: graph().unwrap(), tables, mode, parser: Arc::new(Words) };
        let mut w = Worker::new(Shard::OWNER, Vec::new());
        w.cache.set_megaflow_limit(4);
        let mut tx = |_: u32, _: Option<u32>, _: &[u8]| {};
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..4_000 {
            let burst: Vec<&[u8]> = (0..32)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    frames[(rng % 8) as usize + 8 * ((rng >> 8) % 6) as usize].as_slice()
                })
                .collect();
            walk::burst(&f, &mut w, Meta::default(), &burst, &mut tx);
            let got: Vec<u32> = std::mem::take(&mut w.ext).iter().map(|s| s.0).collect();
            let want: Vec<u32> = burst
                .iter()
                .map(|b| ports[&u64::from_be_bytes(b[..8].try_into().unwrap())])
                .collect();
            assert_eq!(got, want, "{mode:?} {:?}", w.cache_choices());
        }
    }
}
