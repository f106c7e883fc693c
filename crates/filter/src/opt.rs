//! The optimiser: a rewrite of the test DAG that keeps every verdict.
//!
//! Passes (in the spirit of pflua's pipeline):
//!
//! 1. **Constant folding** of values (`2 + 3`, `x & 0`, `x + 0`, `x * 1`)
//!    with BPF's 32-bit wrap-around. A division by a constant zero is never
//!    folded (its guard still fails the packet). Folding may drop a packet
//!    read from a value: this is sound because the read's length guard is a
//!    separate test that stays in place.
//! 2. **Range inference**: an interval for every value (a 1-byte load is in
//!    0..=255, `x & 0x1fff` is at most 0x1fff, ...), combined with the facts
//!    known on the current path, decides comparisons such as
//!    `ip[9] == 300` or `ether[12:2] > 70000`, and dynamic bounds checks.
//! 3. **Redundant test removal and length-check merging**: the DAG is
//!    re-built top-down, specialising each node for the facts that hold on
//!    the path to it: the outcome of every earlier test (`ether[12:2] ==
//!    0x800` known true makes `ether[12:2] == 0x86dd` false), the known
//!    lower and upper bounds of the captured length (a dominated
//!    `caplen >= n` disappears, so the many guards of an expression collapse
//!    into the few that are not implied), and known equalities.
//!    Specialisation is memoised on (node, facts); when the number of
//!    specialised nodes exceeds a budget the remaining nodes are copied
//!    without specialisation, so the pass is linear in the worst case.
//!
//! Cost: proportional to the number of (node, distinct fact set) pairs,
//! bounded by `BUDGET`.
//!
//! Invariant: for every packet, `optimize(p).run(pkt) == p.run(pkt)`
//! (property-tested in `tests.rs` and checked against libpcap).

use crate::ir::{arith, CmpOp, Node, NodeId, Program, Test, Val, ValId, REJECT};
use crate::parse::ArOp;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Maximum number of specialised nodes before falling back to copying.
const BUDGET: usize = 20_000;

/// Programs with more nodes than this are not optimised.
const MAX_OPT_NODES: usize = 5_000;

#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Facts {
    min_cap: u64,
    max_cap: u64,
    eq: BTreeMap<ValId, u32>,
    ne: BTreeSet<(ValId, u32)>,
    known: BTreeMap<TestKey, bool>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct TestKey(u8, u32, u32, u32);

fn key(t: Test) -> TestKey {
    match t {
        Test::Cmp(op, a, b) => TestKey(op as u8, a.0, b.0, 0),
        Test::CapGe(n) => TestKey(10, n, 0, 0),
        Test::InBounds { base, k, size } => TestKey(11, base.0, k, u32::from(size)),
    }
}

struct Opt<'a> {
    src: &'a Program,
    out: Program,
    /// value id in `src` -> folded value id in `out`.
    vmap: HashMap<ValId, ValId>,
    memo: HashMap<(NodeId, Facts), NodeId>,
    plain: HashMap<NodeId, NodeId>,
    work: usize,
}

/// Returns an optimised copy of `p`.
pub fn optimize(p: &Program) -> Program {
    // The rewrite recurses along DAG paths: very large programs (far beyond
    // hand-written filters) are left unoptimised rather than risk the stack.
    if p.nodes.len() > MAX_OPT_NODES {
        return p.clone();
    }
    let mut o = Opt {
        src: p,
        out: Program::new(),
        vmap: HashMap::new(),
        memo: HashMap::new(),
        plain: HashMap::new(),
        work: 0,
    };
    let facts = Facts { min_cap: 0, max_cap: u64::from(u32::MAX), ..Facts::default() };
    let root = o.spec(p.root, &facts, 0);
    o.out.root = root;
    o.out
}

/// The filter pipeline: [`optimize`], then [`hoist_length_checks`], then
/// [`optimize`] again so that range inference deletes the guards the
/// strengthened ones now imply. Only for accept/reject filters: the pass
/// relies on `Fail` and `Ret(REJECT)` giving the same verdict, which is not
/// true of a pfmatch dispatcher.
pub fn optimize_filter(p: &Program) -> Program {
    let o = optimize(p);
    match hoist_length_checks(&o) {
        Some(h) => optimize(&h),
        None => o,
    }
}

/// Never accepts: no minimum caplen makes the node accept.
const NEVER: u64 = u64::MAX;

/// For every node, the smallest captured length with which some path from
/// that node can still end in an accepting `Ret` ([`NEVER`] if none can).
/// Edges point to older nodes, so one pass in index order sees every
/// successor first.
fn min_accept_len(p: &Program) -> Vec<u64> {
    let mut need: Vec<u64> = Vec::with_capacity(p.nodes.len());
    for (i, n) in p.nodes.iter().enumerate() {
        let at = |x: NodeId| -> u64 {
            if (x.0 as usize) < i {
                need.get(x.0 as usize).copied().unwrap_or(0)
            } else {
                // Not a DAG edge (never built by `Program::node`): assume
                // the worst, i.e. no requirement.
                0
            }
        };
        let v = match *n {
            Node::Ret(r) if r != REJECT => 0,
            Node::Ret(_) | Node::Fail => NEVER,
            Node::If { test, t, f } => {
                // The true branch of a length test only sees packets at
                // least that long: its requirement rises accordingly.
                let floor = match test {
                    Test::CapGe(a) => u64::from(a),
                    Test::InBounds { k, size, .. } => u64::from(k) + u64::from(size),
                    Test::Cmp(..) => 0,
                };
                let nt = at(t);
                let nt = if nt == NEVER { NEVER } else { nt.max(floor) };
                nt.min(at(f))
            }
            Node::Chain { t, f, fail, .. } => at(t).min(at(f)).min(at(fail)),
        };
        need.push(v);
    }
    need
}

/// Hoists and merges packet-length checks (pflua's "length assertion
/// hoisting"), in the form that is exact for a filter's verdict.
///
/// For each node we compute `need(n)`: the smallest captured length with
/// which *any* path from `n` can end in an accepting `Ret`. A guard
/// `If(caplen >= a, t, f)` whose `f` can never accept (typically `Fail`)
/// and with `need(n) = b > a` is rewritten to `If(caplen >= b, t, f)`.
///
/// Why the verdict is unchanged: packets with `caplen < a` or `caplen >= b`
/// take the same branch as before. A packet with `a <= caplen < b` used to
/// go to `t`; since `need(n) = b` and `f` never accepts, `need(t) >= b`, so
/// from `t` it could not be accepted (every accepting path from `t` reads or
/// checks beyond its length first, and such a read rejects). It now goes to
/// `f`, which does not accept either. Only the return value of a rejection
/// may change (`Fail` instead of `Ret(REJECT)`): both mean "reject". The
/// pass is context-free (`need` depends only on the sub-DAG), so shared
/// nodes may be rewritten once for all their predecessors.
///
/// The guards this makes redundant (later `caplen >= c` with `c <= b`) are
/// removed by running [`optimize`] again (see [`optimize_filter`]).
/// Returns `None` when no guard was strengthened.
pub fn hoist_length_checks(p: &Program) -> Option<Program> {
    if p.nodes.len() > MAX_OPT_NODES {
        return None;
    }
    let need = min_accept_len(p);
    let mut changed = false;
    let mut out = Program::new();
    // Values are interned: re-interning in order keeps every id.
    for v in &p.vals {
        out.val(*v);
    }
    let mut map: Vec<NodeId> = Vec::with_capacity(p.nodes.len());
    let get = |map: &Vec<NodeId>, x: NodeId| map.get(x.0 as usize).copied();
    for (i, n) in p.nodes.iter().enumerate() {
        let node = match *n {
            Node::Ret(r) => Node::Ret(r),
            Node::Fail => Node::Fail,
            Node::If { test, t, f } => {
                let (Some(t2), Some(f2)) = (get(&map, t), get(&map, f)) else { return None };
                let here = need.get(i).copied().unwrap_or(0);
                let f_never = need.get(f.0 as usize).copied() == Some(NEVER);
                let test = match test {
                    Test::CapGe(a) if f_never && here != NEVER && here > u64::from(a) => {
                        match u32::try_from(here) {
                            Ok(b) => {
                                changed = true;
                                Test::CapGe(b)
                            }
                            Err(_) => test,
                        }
                    }
                    _ => test,
                };
                Node::If { test, t: t2, f: f2 }
            }
            Node::Chain { chain, t, f, fail } => {
                let (Some(t2), Some(f2), Some(x2)) = (get(&map, t), get(&map, f), get(&map, fail))
                else {
                    return None;
                };
                Node::Chain { chain, t: t2, f: f2, fail: x2 }
            }
        };
        map.push(out.node(node));
    }
    out.root = get(&map, p.root)?;
    changed.then_some(out)
}

type Range = (u32, u32);
const FULL: Range = (0, u32::MAX);

impl Opt<'_> {
    /// Folds a source value into the output program.
    fn fold(&mut self, v: ValId) -> ValId {
        if let Some(x) = self.vmap.get(&v) {
            return *x;
        }
        let r = match self.src.get_val(v) {
            Val::Const(c) => self.out.konst(c),
            Val::WireLen => self.out.val(Val::WireLen),
            Val::Neg(a) => {
                let a = self.fold(a);
                match self.out.get_val(a) {
                    Val::Const(c) => self.out.konst(c.wrapping_neg()),
                    _ => self.out.val(Val::Neg(a)),
                }
            }
            Val::Load { base, k, size } => {
                let b = self.fold(base);
                // Normalise constant bases into the offset.
                match self.out.get_val(b) {
                    Val::Const(c) if c != 0 && c.checked_add(k).is_some() => {
                        let z = self.out.konst(0);
                        self.out.val(Val::Load { base: z, k: c + k, size })
                    }
                    _ => self.out.val(Val::Load { base: b, k, size }),
                }
            }
            Val::Bin(op, a, b) => {
                let a = self.fold(a);
                let b = self.fold(b);
                let ca = match self.out.get_val(a) {
                    Val::Const(c) => Some(c),
                    _ => None,
                };
                let cb = match self.out.get_val(b) {
                    Val::Const(c) => Some(c),
                    _ => None,
                };
                match (op, ca, cb) {
                    (_, Some(x), Some(y)) => match arith(op, x, y) {
                        Some(r) => self.out.konst(r),
                        None => self.out.val(Val::Bin(op, a, b)),
                    },
                    (
                        ArOp::Add | ArOp::Sub | ArOp::Or | ArOp::Xor | ArOp::Shl | ArOp::Shr,
                        _,
                        Some(0),
                    ) => a,
                    (ArOp::Add | ArOp::Or | ArOp::Xor, Some(0), _) => b,
                    (ArOp::Mul | ArOp::Div, _, Some(1)) => a,
                    (ArOp::Mul, Some(1), _) => b,
                    (ArOp::And, _, Some(u32::MAX)) => a,
                    (ArOp::And, Some(u32::MAX), _) => b,
                    (ArOp::And | ArOp::Mul, _, Some(0)) | (ArOp::And | ArOp::Mul, Some(0), _) => {
                        self.out.konst(0)
                    }
                    _ => self.out.val(Val::Bin(op, a, b)),
                }
            }
        };
        self.vmap.insert(v, r);
        r
    }

    /// Interval of an output value under `f`.
    fn range(&self, v: ValId, f: &Facts, depth: u32) -> Range {
        if let Some(c) = f.eq.get(&v) {
            return (*c, *c);
        }
        if depth > 64 {
            return FULL;
        }
        match self.out.get_val(v) {
            Val::Const(c) => (c, c),
            Val::WireLen => FULL,
            Val::Load { size: 1, .. } => (0, 0xff),
            Val::Load { size: 2, .. } => (0, 0xffff),
            Val::Load { .. } | Val::Neg(_) => FULL,
            Val::Bin(op, a, b) => {
                let (alo, ahi) = self.range(a, f, depth + 1);
                let (blo, bhi) = self.range(b, f, depth + 1);
                match op {
                    ArOp::And => (0, ahi.min(bhi)),
                    ArOp::Or | ArOp::Xor => {
                        let m = ahi.max(bhi);
                        let top = if m == 0 { 0 } else { u32::MAX >> m.leading_zeros() };
                        (if op == ArOp::Or { alo.max(blo) } else { 0 }, top)
                    }
                    ArOp::Add => match (alo.checked_add(blo), ahi.checked_add(bhi)) {
                        (Some(lo), Some(hi)) => (lo, hi),
                        _ => FULL,
                    },
                    ArOp::Mul => match (alo.checked_mul(blo), ahi.checked_mul(bhi)) {
                        (Some(lo), Some(hi)) => (lo, hi),
                        _ => FULL,
                    },
                    ArOp::Shl if blo == bhi && blo < 32 => match ahi.checked_mul(1u32 << blo) {
                        Some(hi) => (alo << blo, hi),
                        None => FULL,
                    },
                    ArOp::Shr if blo == bhi && blo < 32 => (alo >> blo, ahi >> blo),
                    ArOp::Div if blo > 0 => (alo / bhi, ahi / blo),
                    ArOp::Mod if blo > 0 => (0, bhi - 1),
                    _ => FULL,
                }
            }
        }
    }

    /// Decides a (folded) test from the facts, if possible.
    fn decide(&self, t: Test, f: &Facts) -> Option<bool> {
        if let Some(r) = f.known.get(&key(t)) {
            return Some(*r);
        }
        match t {
            Test::CapGe(n) => {
                if u64::from(n) <= f.min_cap {
                    Some(true)
                } else if u64::from(n) > f.max_cap {
                    Some(false)
                } else {
                    None
                }
            }
            Test::InBounds { base, k, size } => {
                let (lo, hi) = self.range(base, f, 0);
                let extra = u64::from(k) + u64::from(size);
                if u64::from(hi) + extra <= f.min_cap {
                    Some(true)
                } else if u64::from(lo) + extra > f.max_cap {
                    Some(false)
                } else {
                    None
                }
            }
            Test::Cmp(op, a, b) => {
                if a == b {
                    return Some(op != CmpOp::Gt);
                }
                let (alo, ahi) = self.range(a, f, 0);
                let (blo, bhi) = self.range(b, f, 0);
                if let Val::Const(c) = self.out.get_val(b) {
                    if op == CmpOp::Eq && f.ne.contains(&(a, c)) {
                        return Some(false);
                    }
                }
                match op {
                    CmpOp::Eq => {
                        if alo == ahi && blo == bhi && alo == blo {
                            Some(true)
                        } else if ahi < blo || bhi < alo {
                            Some(false)
                        } else {
                            None
                        }
                    }
                    CmpOp::Gt => {
                        if alo > bhi {
                            Some(true)
                        } else if ahi <= blo {
                            Some(false)
                        } else {
                            None
                        }
                    }
                    CmpOp::Ge => {
                        if alo >= bhi {
                            Some(true)
                        } else if ahi < blo {
                            Some(false)
                        } else {
                            None
                        }
                    }
                }
            }
        }
    }

    fn learn(&self, t: Test, outcome: bool, f: &Facts) -> Facts {
        let mut g = f.clone();
        g.known.insert(key(t), outcome);
        match t {
            Test::CapGe(n) => {
                if outcome {
                    g.min_cap = g.min_cap.max(u64::from(n));
                } else {
                    g.max_cap = g.max_cap.min(u64::from(n).saturating_sub(1));
                }
            }
            Test::InBounds { base, k, size } if outcome => {
                // base + k + size <= caplen: a lower bound on caplen.
                let (lo, _) = self.range(base, f, 0);
                let need = u64::from(lo) + u64::from(k) + u64::from(size);
                g.min_cap = g.min_cap.max(need);
            }
            Test::Cmp(CmpOp::Eq, a, b) => {
                if let Val::Const(c) = self.out.get_val(b) {
                    if outcome {
                        g.eq.insert(a, c);
                    } else {
                        g.ne.insert((a, c));
                    }
                }
            }
            _ => {}
        }
        g
    }

    fn fold_test(&mut self, t: Test) -> Test {
        match t {
            Test::Cmp(op, a, b) => {
                let a = self.fold(a);
                let b = self.fold(b);
                // Constants on the right (a < b is b > a, which BPF lacks; we
                // only swap for equality).
                if op == CmpOp::Eq && matches!(self.out.get_val(a), Val::Const(_)) {
                    Test::Cmp(op, b, a)
                } else {
                    Test::Cmp(op, a, b)
                }
            }
            Test::CapGe(n) => Test::CapGe(n),
            Test::InBounds { base, k, size } => {
                let b = self.fold(base);
                match self.out.get_val(b) {
                    Val::Const(c) => match u64::from(c) + u64::from(k) + u64::from(size) {
                        end if end <= u64::from(u32::MAX) => Test::CapGe(end as u32),
                        _ => Test::InBounds { base: b, k, size },
                    },
                    _ => Test::InBounds { base: b, k, size },
                }
            }
        }
    }

    /// Copy without specialisation (after the budget is spent).
    fn copy(&mut self, n: NodeId) -> NodeId {
        if let Some(x) = self.plain.get(&n) {
            return *x;
        }
        let r = match self.src.get_node(n) {
            Node::Ret(r) => self.out.node(Node::Ret(r)),
            Node::Fail => self.out.node(Node::Fail),
            Node::If { test, t, f } => {
                let test = self.fold_test(test);
                let t = self.copy(t);
                let f = self.copy(f);
                self.out.node(Node::If { test, t, f })
            }
            Node::Chain { chain, t, f, fail } => {
                let t = self.copy(t);
                let f = self.copy(f);
                let fail = self.copy(fail);
                self.out.node(Node::Chain { chain, t, f, fail })
            }
        };
        self.plain.insert(n, r);
        r
    }

    fn spec(&mut self, n: NodeId, f: &Facts, depth: u32) -> NodeId {
        if self.work > BUDGET || depth > 2_000 {
            return self.copy(n);
        }
        if let Some(x) = self.memo.get(&(n, f.clone())) {
            return *x;
        }
        self.work += 1;
        let r = match self.src.get_node(n) {
            Node::Ret(r) => self.out.node(Node::Ret(r)),
            Node::Fail => self.out.node(Node::Fail),
            Node::If { test, t, f: e } => {
                let test = self.fold_test(test);
                match self.decide(test, f) {
                    Some(true) => self.spec(t, f, depth + 1),
                    Some(false) => self.spec(e, f, depth + 1),
                    None => {
                        let ft = self.learn(test, true, f);
                        let fe = self.learn(test, false, f);
                        let t2 = self.spec(t, &ft, depth + 1);
                        let e2 = self.spec(e, &fe, depth + 1);
                        self.out.node(Node::If { test, t: t2, f: e2 })
                    }
                }
            }
            Node::Chain { chain, t, f: e, fail } => {
                let t2 = self.spec(t, f, depth + 1);
                let e2 = self.spec(e, f, depth + 1);
                let fail2 = self.spec(fail, f, depth + 1);
                self.out.node(Node::Chain { chain, t: t2, f: e2, fail: fail2 })
            }
        };
        self.memo.insert((n, f.clone()), r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Filter, Options};

    fn count(p: &Program) -> usize {
        p.reachable().iter().filter(|n| matches!(p.get_node(**n), Node::If { .. })).count()
    }

    #[test]
    fn removes_repeated_and_implied_tests() {
        let f = Filter::compile_ir("ip and ip and ip", Options::default()).unwrap();
        // caplen >= 14, ethertype == 0x800: two tests.
        assert_eq!(count(&f.ir), 2, "{:?}", f.ir.nodes);
        assert!(count(&f.raw) > 2);
        let f = Filter::compile_ir("ip proto 300", Options::default()).unwrap();
        // The protocol byte can never be 300: only the guards and the
        // ethertype test remain before `false`.
        assert!(f.ir.reachable().iter().all(|n| !matches!(f.ir.get_node(*n),
            Node::If { test: Test::Cmp(_, _, c), .. } if f.ir.get_val(c) == Val::Const(300))));
    }

    #[test]
    fn keeps_failing_guards() {
        // `ether[1000] = 0 or 1 = 1` must still reject short packets.
        let f = Filter::compile_ir("ether[1000] = 0 or 1 = 1", Options::default()).unwrap();
        assert!(!f.ir.matches(&[0u8; 60], 60));
        assert!(f.ir.matches(&[1u8; 1001], 1001));
    }

    #[test]
    fn folds_constants() {
        let f = Filter::compile_ir("2 + 3 = 5 and 4294967295 + 1 = 0", Options::default()).unwrap();
        assert_eq!(count(&f.ir), 0);
        assert!(f.ir.matches(&[], 0));
    }

    #[test]
    fn hoists_length_checks_without_changing_verdicts() {
        for e in ["ip and tcp", "tcp port 80", "udp and ip[8] = 64", "ip6 or arp"] {
            let f = Filter::compile_ir(e, Options::default()).unwrap();
            let once = optimize(&f.raw);
            let guards = |p: &Program| -> Vec<u32> {
                let mut g: Vec<u32> = p
                    .reachable()
                    .iter()
                    .filter_map(|n| match p.get_node(*n) {
                        Node::If { test: Test::CapGe(a), .. } => Some(a),
                        _ => None,
                    })
                    .collect();
                g.sort_unstable();
                g
            };
            if e == "ip and tcp" {
                // `caplen >= 14` (ethertype) then `caplen >= 24` (protocol
                // byte): every accepting path needs 24, so the first guard
                // becomes `caplen >= 24` and the second one disappears.
                assert_eq!(guards(&once), vec![14, 24], "{}", once.dump());
                let h = hoist_length_checks(&once).expect("a guard is strengthened");
                let root = h.get_node(h.root);
                assert!(matches!(root, Node::If { test: Test::CapGe(24), .. }), "{}", h.dump());
                assert_eq!(guards(&f.ir), vec![24], "{}", f.ir.dump());
            }
            for (p, wl) in crate::gen::corpus_with(7, 2000, false) {
                for cut in [p.len(), 13, 14, 20, 23, 24, 33, 34, 41, 42, 54, 60] {
                    let q = &p[..cut.min(p.len())];
                    assert_eq!(f.raw.matches(q, wl), f.ir.matches(q, wl), "{e} on {q:02x?}");
                    assert_eq!(once.matches(q, wl), f.ir.matches(q, wl), "{e} on {q:02x?}");
                }
            }
        }
    }
}
