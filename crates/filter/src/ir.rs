//! The middle-end representation: a control-flow DAG of tests over interned
//! values, and its reference interpreter.
//!
//! # Basic design
//!
//! Expansion ([`crate::expand`]) turns each pcap-filter primitive into a small
//! boolean tree [`B`] whose leaves are side-effect-free [`Test`]s; every packet
//! read is preceded by an explicit *guard* ([`B::Check`]) that sends the
//! whole filter to `fail` when the read would be out of range (libpcap's rule:
//! an out-of-range read or a division by zero rejects the packet, whatever
//! the surrounding `or`/`not` say). [`Program::lower`] then compiles the tree
//! in continuation-passing style into a DAG of [`Node`]s: `If(test, then,
//! else)` plus leaves `Ret(n)` and `Fail`. Nodes are built bottom-up, so every
//! edge points to a node with a *smaller* index: the DAG is acyclic by
//! construction and the interpreter's loop always makes progress.
//!
//! Values ([`Val`]) and nodes are hash-consed: structurally equal values
//! share one [`ValId`], which lets the optimiser recognise repeated tests
//! (`ether[12:2] == 0x800` in `ip and tcp`) by id.
//!
//! # Invariant
//!
//! A `Val::Load` may only be evaluated on a path where a guard proves it in
//! range (`CapGe(n)` with `n >= k + size` for constant bases, or an
//! `InBounds` test with the same base). The interpreter re-checks every read
//! anyway (and fails on violation); the JIT checks the invariant while
//! emitting code and falls back to a checked load where it cannot prove it.

use crate::parse::ArOp;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeId(pub u32);

/// 32-bit unsigned values, BPF semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Val {
    Const(u32),
    /// Length of the packet on the wire (`len`).
    WireLen,
    /// Big-endian read of `size` bytes at `base + k` (no wrap-around).
    Load {
        base: ValId,
        k: u32,
        size: u8,
    },
    Bin(ArOp, ValId, ValId),
    Neg(ValId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Gt,
    Ge,
}

/// A test that never fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Test {
    Cmp(CmpOp, ValId, ValId),
    /// Captured length >= n.
    CapGe(u32),
    /// `base + k + size <= caplen`, computed without wrap-around.
    InBounds {
        base: ValId,
        k: u32,
        size: u8,
    },
}

/// `ip protochain` / `ip6 protochain`: a loop over extension headers,
/// kept as one node (it has three outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain {
    pub v6: bool,
    /// Offset of the network header.
    pub nh: u32,
    pub proto: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    Ret(u32),
    Fail,
    If { test: Test, t: NodeId, f: NodeId },
    Chain { chain: Chain, t: NodeId, f: NodeId, fail: NodeId },
}

/// Boolean tree produced by expansion, in libpcap's evaluation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum B {
    Const(bool),
    Test(Test),
    And(Box<B>, Box<B>),
    Or(Box<B>, Box<B>),
    Not(Box<B>),
    /// If the guard holds evaluate the inner tree, else fail.
    Check(Test, Box<B>),
    Chain(Chain),
}

impl B {
    pub fn and(a: B, b: B) -> B {
        B::And(Box::new(a), Box::new(b))
    }
    pub fn or(a: B, b: B) -> B {
        B::Or(Box::new(a), Box::new(b))
    }
    pub fn negate(a: B) -> B {
        B::Not(Box::new(a))
    }
}

/// Return code of a filter that accepts.
pub const ACCEPT: u32 = 1;
/// Return code of a filter that rejects.
pub const REJECT: u32 = 0;

/// Values and nodes of one compiled filter or dispatcher.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub vals: Vec<Val>,
    val_ix: HashMap<Val, ValId>,
    pub nodes: Vec<Node>,
    node_ix: HashMap<Node, NodeId>,
    /// Entry node.
    pub root: NodeId,
}

/// Upper bound on nodes/values: bounds memory on hostile input.
pub const MAX_NODES: usize = 1 << 20;

/// Iteration cap of the protochain loop (libpcap itself would spin forever
/// on a self-referencing AH header; we reject instead).
pub const CHAIN_MAX_STEPS: u32 = 4096;

impl Program {
    pub fn new() -> Program {
        Program::default()
    }

    pub fn val(&mut self, v: Val) -> ValId {
        if let Some(id) = self.val_ix.get(&v) {
            return *id;
        }
        let id = ValId(self.vals.len() as u32);
        self.vals.push(v);
        self.val_ix.insert(v, id);
        id
    }

    pub fn konst(&mut self, c: u32) -> ValId {
        self.val(Val::Const(c))
    }

    pub fn get_val(&self, id: ValId) -> Val {
        self.vals.get(id.0 as usize).copied().unwrap_or(Val::Const(0))
    }

    pub fn node(&mut self, n: Node) -> NodeId {
        // Trivial simplification: a test whose branches agree is skipped.
        // Tests never fail, so this is always sound.
        if let Node::If { t, f, .. } = n {
            if t == f {
                return t;
            }
        }
        if let Some(id) = self.node_ix.get(&n) {
            return *id;
        }
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(n);
        self.node_ix.insert(n, id);
        id
    }

    pub fn get_node(&self, id: NodeId) -> Node {
        self.nodes.get(id.0 as usize).copied().unwrap_or(Node::Fail)
    }

    /// Compiles `b` with continuations `t` (true), `f` (false) and `fail`.
    pub fn lower(&mut self, b: &B, t: NodeId, f: NodeId, fail: NodeId) -> NodeId {
        match b {
            B::Const(true) => t,
            B::Const(false) => f,
            B::Test(x) => self.node(Node::If { test: *x, t, f }),
            B::And(a, b2) => {
                let nb = self.lower(b2, t, f, fail);
                self.lower(a, nb, f, fail)
            }
            B::Or(a, b2) => {
                let nb = self.lower(b2, t, f, fail);
                self.lower(a, t, nb, fail)
            }
            B::Not(a) => self.lower(a, f, t, fail),
            B::Check(g, inner) => {
                let ni = self.lower(inner, t, f, fail);
                self.node(Node::If { test: *g, t: ni, f: fail })
            }
            B::Chain(c) => self.node(Node::Chain { chain: *c, t, f, fail }),
        }
    }

    /// Builds a filter program (accept/reject) from a boolean tree.
    pub fn filter(b: &B) -> Program {
        let mut p = Program::new();
        let acc = p.node(Node::Ret(ACCEPT));
        let rej = p.node(Node::Ret(REJECT));
        let fail = p.node(Node::Fail);
        p.root = p.lower(b, acc, rej, fail);
        p
    }

    /// Number of nodes reachable from the root.
    pub fn reachable(&self) -> Vec<NodeId> {
        let mut seen = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        let mut stack = vec![self.root];
        while let Some(n) = stack.pop() {
            let Some(s) = seen.get_mut(n.0 as usize) else { continue };
            if *s {
                continue;
            }
            *s = true;
            out.push(n);
            match self.get_node(n) {
                Node::If { t, f, .. } => {
                    stack.push(t);
                    stack.push(f);
                }
                Node::Chain { t, f, fail, .. } => {
                    stack.extend([t, f, fail]);
                }
                _ => {}
            }
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }

    /// Human-readable listing of the reachable nodes (`--dump ir`).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for n in self.reachable() {
            let line = match self.get_node(n) {
                Node::Ret(r) => format!("ret {r}"),
                Node::Fail => "fail".to_string(),
                Node::If { test, t, f } => {
                    format!("if {} then n{} else n{}", self.test_str(test), t.0, f.0)
                }
                Node::Chain { chain, t, f, fail } => format!(
                    "if {}protochain({}) at {} then n{} else n{} fail n{}",
                    if chain.v6 { "ip6 " } else { "ip " },
                    chain.proto,
                    chain.nh,
                    t.0,
                    f.0,
                    fail.0
                ),
            };
            let root = if n == self.root { " (entry)" } else { "" };
            out.push_str(&format!("n{}{root}: {line}\n", n.0));
        }
        out
    }

    fn test_str(&self, t: Test) -> String {
        match t {
            Test::Cmp(op, a, b) => {
                let op = match op {
                    CmpOp::Eq => "==",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                format!("{} {op} {}", self.val_str(a, 0), self.val_str(b, 0))
            }
            Test::CapGe(n) => format!("caplen >= {n}"),
            Test::InBounds { base, k, size } => {
                format!("{} + {} <= caplen", self.val_str(base, 0), u64::from(k) + u64::from(size))
            }
        }
    }

    fn val_str(&self, v: ValId, depth: u32) -> String {
        if depth > 32 {
            return "...".into();
        }
        match self.get_val(v) {
            Val::Const(c) if c > 9 => format!("{c:#x}"),
            Val::Const(c) => c.to_string(),
            Val::WireLen => "len".into(),
            Val::Neg(a) => format!("-{}", self.val_str(a, depth + 1)),
            Val::Load { base, k, size } => match self.get_val(base) {
                Val::Const(0) => format!("P[{k}:{size}]"),
                _ => format!("P[{} + {k}:{size}]", self.val_str(base, depth + 1)),
            },
            Val::Bin(op, a, b) => {
                let o = match op {
                    ArOp::Add => "+",
                    ArOp::Sub => "-",
                    ArOp::Mul => "*",
                    ArOp::Div => "/",
                    ArOp::Mod => "%",
                    ArOp::And => "&",
                    ArOp::Or => "|",
                    ArOp::Xor => "^",
                    ArOp::Shl => "<<",
                    ArOp::Shr => ">>",
                };
                format!("({} {o} {})", self.val_str(a, depth + 1), self.val_str(b, depth + 1))
            }
        }
    }

    /// Runs the program: `Some(ret)` or `None` for fail.
    pub fn run(&self, pkt: &[u8], wirelen: u32) -> Option<u32> {
        let mut n = self.root;
        loop {
            match self.get_node(n) {
                Node::Ret(r) => return Some(r),
                Node::Fail => return None,
                Node::If { test, t, f } => {
                    let next = if self.eval_test(test, pkt, wirelen)? { t } else { f };
                    // Edges point to older nodes: progress is guaranteed.
                    if next >= n {
                        return None;
                    }
                    n = next;
                }
                Node::Chain { chain, t, f, fail } => {
                    let next = match chain_eval(chain, pkt) {
                        Some(true) => t,
                        Some(false) => f,
                        None => fail,
                    };
                    if next >= n {
                        return None;
                    }
                    n = next;
                }
            }
        }
    }

    /// True iff the filter accepts (fail and `Ret(0)` reject).
    pub fn matches(&self, pkt: &[u8], wirelen: u32) -> bool {
        self.run(pkt, wirelen).is_some_and(|r| r != REJECT)
    }

    pub fn eval_test(&self, t: Test, pkt: &[u8], wirelen: u32) -> Option<bool> {
        Some(match t {
            Test::Cmp(op, a, b) => {
                let a = self.eval_val(a, pkt, wirelen, 0)?;
                let b = self.eval_val(b, pkt, wirelen, 0)?;
                match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                }
            }
            Test::CapGe(n) => pkt.len() as u64 >= u64::from(n),
            Test::InBounds { base, k, size } => {
                let b = self.eval_val(base, pkt, wirelen, 0)?;
                u64::from(b) + u64::from(k) + u64::from(size) <= pkt.len() as u64
            }
        })
    }

    /// Evaluates a value; `None` on an (unguarded) out-of-range read or a
    /// division by zero, which the guards should have excluded.
    pub fn eval_val(&self, v: ValId, pkt: &[u8], wirelen: u32, depth: u32) -> Option<u32> {
        if depth > 10_000 {
            return None;
        }
        Some(match self.get_val(v) {
            Val::Const(c) => c,
            Val::WireLen => wirelen,
            Val::Load { base, k, size } => {
                let b = self.eval_val(base, pkt, wirelen, depth + 1)?;
                read_be(pkt, u64::from(b) + u64::from(k), size)?
            }
            Val::Neg(a) => self.eval_val(a, pkt, wirelen, depth + 1)?.wrapping_neg(),
            Val::Bin(op, a, b) => {
                let a = self.eval_val(a, pkt, wirelen, depth + 1)?;
                let b = self.eval_val(b, pkt, wirelen, depth + 1)?;
                arith(op, a, b)?
            }
        })
    }
}

/// BPF arithmetic: wrap-around, `None` on division by zero, shifts by 32
/// or more give 0 (libpcap's `bpf_filter`).
pub fn arith(op: ArOp, a: u32, b: u32) -> Option<u32> {
    Some(match op {
        ArOp::Add => a.wrapping_add(b),
        ArOp::Sub => a.wrapping_sub(b),
        ArOp::Mul => a.wrapping_mul(b),
        ArOp::Div => a.checked_div(b)?,
        ArOp::Mod => a.checked_rem(b)?,
        ArOp::And => a & b,
        ArOp::Or => a | b,
        ArOp::Xor => a ^ b,
        ArOp::Shl => a.checked_shl(b).unwrap_or(0),
        ArOp::Shr => a.checked_shr(b).unwrap_or(0),
    })
}

/// Big-endian read; `None` when out of range.
pub fn read_be(pkt: &[u8], off: u64, size: u8) -> Option<u32> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::from(size))?;
    let bytes = pkt.get(start..end)?;
    Some(bytes.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)))
}

/// The protochain loop (see libpcap's `gen_protochain`): `Some(matched)`,
/// or `None` when a read is out of range.
pub fn chain_eval(c: Chain, pkt: &[u8]) -> Option<bool> {
    let nh = u64::from(c.nh);
    let ind = |x: u32, k: u64| read_be(pkt, u64::from(x) + k, 1);
    let (mut a, mut x) = if c.v6 {
        (read_be(pkt, nh + 6, 1)?, 40u32)
    } else {
        let a = read_be(pkt, nh + 9, 1)?;
        let x = (read_be(pkt, nh, 1)? & 0xf) << 2;
        (a, x)
    };
    for _ in 0..CHAIN_MAX_STEPS {
        if a == c.proto || a == 59 {
            return Some(a == c.proto);
        }
        if c.v6 && matches!(a, 0 | 60 | 43 | 44) {
            let next = ind(x, nh)?;
            let l = ind(x, nh + 1)?;
            x = (l.wrapping_add(1)).wrapping_mul(8).wrapping_add(x);
            a = next;
        } else if a == 51 {
            let next = ind(x, nh)?;
            x = x.wrapping_add(1);
            let l = ind(x, nh)?;
            x = l.wrapping_add(2).wrapping_mul(4);
            a = next;
        } else {
            return Some(a == c.proto);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dag_edges_point_backwards() {
        let mut p = Program::new();
        let c = p.konst(0x800);
        let z = p.konst(0);
        let ld = p.val(Val::Load { base: z, k: 12, size: 2 });
        let b = B::Check(Test::CapGe(14), Box::new(B::Test(Test::Cmp(CmpOp::Eq, ld, c))));
        let acc = p.node(Node::Ret(1));
        let rej = p.node(Node::Ret(0));
        let fail = p.node(Node::Fail);
        p.root = p.lower(&B::negate(b), acc, rej, fail);
        for n in p.reachable() {
            if let Node::If { t, f, .. } = p.get_node(n) {
                assert!(t < n && f < n);
            }
        }
        let mut pkt = vec![0u8; 14];
        pkt[12] = 8;
        assert!(!p.matches(&pkt, 14));
        pkt[12] = 0x86;
        assert!(p.matches(&pkt, 14));
        // short packet: the guard fails, and `not` does not rescue it.
        assert!(!p.matches(&pkt[..13], 13));
    }

    #[test]
    fn bpf_arith() {
        assert_eq!(arith(ArOp::Shl, 1, 32), Some(0));
        assert_eq!(arith(ArOp::Div, 1, 0), None);
        assert_eq!(arith(ArOp::Sub, 0, 1), Some(u32::MAX));
        assert_eq!(read_be(&[1, 2, 3, 4], 1, 2), Some(0x0203));
        assert_eq!(read_be(&[1, 2, 3, 4], 3, 2), None);
        assert_eq!(read_be(&[1, 2, 3, 4], u64::MAX, 1), None);
    }
}
