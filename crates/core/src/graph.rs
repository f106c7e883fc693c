//! The control graph: which table a packet visits next.
//!
//! # What
//! A walk starts at the graph's start node and follows edges until it
//! reaches [`Node::End`] (or an edge that ends it). Nodes apply a table
//! ([`Node::Apply`]) or test key bits ([`Node::Branch`]); after a table,
//! the edge taken depends on [`Next`]: the hit entry's own next table
//! (OpenFlow's goto-table, [`Next::Entry`]), hit or miss (P4's
//! `if (t.apply().hit)`), the hit entry's action (P4's
//! `switch (t.apply().action_run)`), or always one node.
//!
//! OpenFlow lowers to the simplest graph ([`Graph::tables`]): node `n`
//! applies table `n` and goes where the entry's goto-table says. A P4
//! control block lowers to a graph with branches (issue 15).
//!
//! # Basic design
//! A graph is plain data, checked when it is built ([`Graph::new`]): every
//! edge names a node, and the graph is acyclic (a DAG, as P4 control flow
//! is), so a walk visits each node at most once and ends. [`Next::Entry`]
//! edges are resolved at run time: to [`Graph::table_node`] of the hit
//! entry's next table, only if that is a higher table number (OpenFlow's
//! rule; flow-mod validation refuses anything else). The acyclicity check
//! counts every edge such an entry could take (to the node of each higher
//! table), so no choice of goto-tables can make a walk loop.
//!
//! A branch reads key bits, so a cache entry recorded over it must hold
//! those bits: [`KeyTest::unwildcard`] adds them to the un-wildcarding
//! mask, exactly as a lookup adds the bits it consulted.
//!
//! # Invariants
//! - Every edge of a built graph names a node; the graph is acyclic,
//!   counting each [`Next::Entry`] edge as edges to every higher table's
//!   node.
//! - Evaluating a node never panics, whatever the key.

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};

/// A node's index in its graph.
pub type NodeId = u16;

/// A test of key bits: `key.words[word] & mask == value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTest {
    pub word: u8,
    pub mask: u64,
    /// Bits outside `mask` are ignored.
    pub value: u64,
}

impl KeyTest {
    /// Whether `key` passes (a word past the key reads as zero).
    #[inline]
    pub fn eval(&self, key: &FlowKey) -> bool {
        let w = key.words.get(usize::from(self.word)).copied().unwrap_or(0);
        w & self.mask == self.value & self.mask
    }

    /// Adds the bits this test reads to an un-wildcarding mask.
    #[inline]
    pub fn unwildcard(&self, wc: &mut FlowMask) {
        if let Some(w) = wc.words.get_mut(usize::from(self.word)) {
            *w |= self.mask;
        }
    }
}

/// Where a walk goes after an [`Node::Apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// To the node applying the hit entry's next table, if it names one
    /// higher than this node's table; otherwise (and after a miss) the
    /// walk ends. OpenFlow's goto-table.
    Entry,
    /// To `hit` after a hit, to `miss` after a miss.
    Hit { hit: NodeId, miss: NodeId },
    /// By the hit entry's action id: the first arm naming it, else
    /// `default` (also after a miss).
    Action { arms: Box<[(u32, NodeId)]>, default: NodeId },
    /// Always to this node.
    To(NodeId),
}

/// One node of a control graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// Look up `table` and run what its hit entry does, then go on as
    /// `next` says.
    Apply { table: u8, next: Next },
    /// Go to `then` if the key passes `test`, else to `otherwise`.
    Branch { test: KeyTest, then: NodeId, otherwise: NodeId },
    /// The walk ends.
    End,
}

/// Why a graph was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// The start or an edge names node `to`, which does not exist.
    NoSuchNode { from: Option<NodeId>, to: NodeId },
    /// A branch tests a word past the key.
    NoSuchWord { node: NodeId, word: u8 },
    /// Following edges from `node` leads back to it.
    Cycle { node: NodeId },
    /// More nodes than node ids.
    TooLarge,
    /// A node applies a table the pipeline does not have (checked when a
    /// pipeline takes the graph).
    NoSuchTable { node: NodeId, table: u8 },
}

impl std::fmt::Display for GraphError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphError::NoSuchNode { from: Some(n), to } => {
                write!(f, "node {n} has an edge to node {to}, which does not exist")
            }
            GraphError::NoSuchNode { from: None, to } => {
                write!(f, "the start node {to} does not exist")
            }
            GraphError::NoSuchWord { node, word } => {
                write!(f, "node {node} tests key word {word}; the key has {KEY_WORDS}")
            }
            GraphError::Cycle { node } => write!(f, "node {node} is on a cycle"),
            GraphError::TooLarge => write!(f, "more than {} nodes", NodeId::MAX),
            GraphError::NoSuchTable { node, table } => {
                write!(f, "node {node} applies table {table}, which does not exist")
            }
        }
    }
}

impl std::error::Error for GraphError {}

/// A checked control graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    nodes: Box<[Node]>,
    start: NodeId,
    /// The first node applying each table, for [`Next::Entry`].
    table_node: Box<[Option<NodeId>; 256]>,
    /// Whether this is the plain table sequence of [`Graph::tables`].
    plain: bool,
}

impl Graph {
    /// Checks `nodes` (see the module's invariants) and builds the graph.
    pub fn new(nodes: Vec<Node>, start: NodeId) -> Result<Graph, GraphError> {
        if nodes.len() > usize::from(NodeId::MAX) {
            return Err(GraphError::TooLarge);
        }
        let exists = |to: NodeId| usize::from(to) < nodes.len();
        if !exists(start) {
            return Err(GraphError::NoSuchNode { from: None, to: start });
        }
        let mut table_node = Box::new([None; 256]);
        for (i, n) in nodes.iter().enumerate() {
            if let Node::Apply { table, .. } = n {
                let slot = &mut table_node[usize::from(*table)];
                if slot.is_none() {
                    *slot = Some(i as NodeId);
                }
            }
        }
        for (i, n) in nodes.iter().enumerate() {
            let from = Some(i as NodeId);
            if let Node::Branch { test, .. } = n {
                if usize::from(test.word) >= KEY_WORDS {
                    return Err(GraphError::NoSuchWord { node: i as NodeId, word: test.word });
                }
            }
            for to in edges(n, &table_node) {
                if !exists(to) {
                    return Err(GraphError::NoSuchNode { from, to });
                }
            }
        }
        // Acyclic: depth-first search with colours (0 new, 1 on the
        // stack, 2 done), iterative so a long chain cannot overflow.
        let mut colour = vec![0u8; nodes.len()];
        for root in 0..nodes.len() {
            if colour[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<NodeId>)> =
                vec![(root, edges(&nodes[root], &table_node).collect())];
            colour[root] = 1;
            while let Some((n, rest)) = stack.last_mut() {
                let n = *n;
                match rest.pop() {
                    Some(to) => {
                        let to = usize::from(to);
                        match colour[to] {
                            0 => {
                                colour[to] = 1;
                                stack.push((to, edges(&nodes[to], &table_node).collect()));
                            }
                            1 => return Err(GraphError::Cycle { node: to as NodeId }),
                            _ => {}
                        }
                    }
                    None => {
                        colour[n] = 2;
                        stack.pop();
                    }
                }
            }
        }
        let plain = start == 0
            && nodes.iter().enumerate().all(|(i, n)| {
                matches!(n, Node::Apply { table, next: Next::Entry } if usize::from(*table) == i)
            });
        Ok(Graph { nodes: nodes.into(), start, table_node, plain })
    }

    /// OpenFlow's graph: node `n` applies table `n` and goes on to the
    /// table the hit entry's goto-table names.
    pub fn tables(n: u8) -> Graph {
        let nodes = (0..n).map(|table| Node::Apply { table, next: Next::Entry }).collect();
        Graph::new(nodes, 0).unwrap_or_else(|_| unreachable!("a table sequence is acyclic"))
    }

    /// Whether this is a [`Graph::tables`] graph (a walk may then follow
    /// goto-table alone).
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    pub fn start(&self) -> NodeId {
        self.start
    }

    /// Node `id` (`None` past the end: a walk treats that as the end).
    #[inline]
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(usize::from(id))
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The first node applying `table`, for [`Next::Entry`] edges.
    #[inline]
    pub fn table_node(&self, table: u8) -> Option<NodeId> {
        self.table_node[usize::from(table)]
    }

    /// Where a walk goes from [`Node::Apply`] `next` on `table`: `hit` is
    /// the hit entry's (action id, next table), `None` for a miss.
    /// `None` ends the walk.
    #[inline]
    pub fn after(&self, table: u8, next: &Next, hit: Option<(u32, Option<u8>)>) -> Option<NodeId> {
        match next {
            Next::Entry => {
                let (_, Some(t)) = hit? else { return None };
                if t > table {
                    self.table_node(t)
                } else {
                    None
                }
            }
            Next::Hit { hit: h, miss } => Some(if hit.is_some() { *h } else { *miss }),
            Next::Action { arms, default } => {
                let found = hit.and_then(|(action, _)| {
                    arms.iter().find(|(a, _)| *a == action).map(|&(_, to)| to)
                });
                Some(found.unwrap_or(*default))
            }
            Next::To(to) => Some(*to),
        }
    }
}

/// The edges a walk may take from a node: for [`Next::Entry`], to the node
/// of every table above the node's own (whichever an entry names).
fn edges<'a>(n: &'a Node, table_node: &[Option<NodeId>; 256]) -> impl Iterator<Item = NodeId> + 'a {
    let v: Vec<NodeId> = match n {
        Node::Apply { table, next } => match next {
            Next::Entry => {
                table_node.iter().skip(usize::from(*table) + 1).flatten().copied().collect()
            }
            Next::Hit { hit, miss } => vec![*hit, *miss],
            Next::Action { arms, default } => {
                arms.iter().map(|&(_, to)| to).chain([*default]).collect()
            }
            Next::To(to) => vec![*to],
        },
        Node::Branch { then, otherwise, .. } => vec![*then, *otherwise],
        Node::End => Vec::new(),
    };
    v.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(table: u8, next: Next) -> Node {
        Node::Apply { table, next }
    }

    #[test]
    fn tables_graph_is_plain_and_follows_goto_upwards_only() {
        let g = Graph::tables(4);
        assert!(g.is_plain());
        assert_eq!(g.start(), 0);
        assert_eq!(g.after(0, &Next::Entry, Some((0, Some(2)))), Some(2));
        assert_eq!(g.after(2, &Next::Entry, Some((0, Some(1)))), None);
        assert_eq!(g.after(2, &Next::Entry, Some((0, Some(2)))), None);
        assert_eq!(g.after(1, &Next::Entry, Some((0, None))), None);
        assert_eq!(g.after(1, &Next::Entry, None), None);
        // A goto past the graph's tables ends the walk.
        assert_eq!(g.after(1, &Next::Entry, Some((0, Some(9)))), None);
    }

    #[test]
    fn hit_action_and_fixed_edges() {
        let g = Graph::new(
            vec![
                apply(0, Next::Hit { hit: 1, miss: 2 }),
                apply(1, Next::Action { arms: vec![(7, 3), (8, 2)].into(), default: 3 }),
                apply(2, Next::To(3)),
                Node::End,
            ],
            0,
        )
        .unwrap();
        assert!(!g.is_plain());
        let n0 = Next::Hit { hit: 1, miss: 2 };
        assert_eq!(g.after(0, &n0, Some((0, None))), Some(1));
        assert_eq!(g.after(0, &n0, None), Some(2));
        let Some(Node::Apply { next: n1, .. }) = g.node(1) else { panic!() };
        assert_eq!(g.after(1, n1, Some((8, None))), Some(2));
        assert_eq!(g.after(1, n1, Some((7, None))), Some(3));
        assert_eq!(g.after(1, n1, Some((9, None))), Some(3));
        assert_eq!(g.after(1, n1, None), Some(3));
        assert_eq!(g.after(2, &Next::To(3), None), Some(3));
        assert_eq!(g.node(9), None);
    }

    #[test]
    fn bad_graphs_are_refused() {
        assert_eq!(
            Graph::new(vec![Node::End], 1),
            Err(GraphError::NoSuchNode { from: None, to: 1 })
        );
        assert_eq!(
            Graph::new(vec![apply(0, Next::To(5))], 0),
            Err(GraphError::NoSuchNode { from: Some(0), to: 5 })
        );
        let cyc = vec![
            apply(0, Next::To(1)),
            Node::Branch { test: KeyTest { word: 0, mask: 1, value: 1 }, then: 2, otherwise: 0 },
            Node::End,
        ];
        assert!(matches!(Graph::new(cyc, 0), Err(GraphError::Cycle { .. })));
        let self_loop = vec![Node::End, apply(3, Next::Hit { hit: 1, miss: 0 })];
        assert_eq!(Graph::new(self_loop, 0), Err(GraphError::Cycle { node: 1 }));
        let far = vec![Node::Branch {
            test: KeyTest { word: KEY_WORDS as u8, mask: 1, value: 0 },
            then: 0,
            otherwise: 0,
        }];
        assert!(matches!(Graph::new(far, 0), Err(GraphError::NoSuchWord { .. })));
        // A diamond is no cycle.
        let diamond = vec![
            apply(0, Next::Hit { hit: 1, miss: 2 }),
            apply(1, Next::To(3)),
            apply(2, Next::To(3)),
            Node::End,
        ];
        assert!(Graph::new(diamond, 0).is_ok());
        // A goto edge counts: table 0's entries may go to table 2, whose
        // node goes on to a second node applying table 0.
        let via_goto = vec![apply(0, Next::Entry), apply(2, Next::To(2)), apply(0, Next::Entry)];
        assert!(matches!(Graph::new(via_goto, 0), Err(GraphError::Cycle { .. })));
        assert!(Graph::new(vec![apply(0, Next::Entry), apply(2, Next::Entry)], 0).is_ok());
        // The largest plain graph is accepted.
        assert_eq!(Graph::tables(255).nodes().len(), 255);
        assert!(GraphError::Cycle { node: 3 }.to_string().contains("node 3"));
    }

    #[test]
    fn key_tests_read_and_unwildcard_their_bits() {
        let mut key = FlowKey::ZERO;
        key.words[3] = 0b1010;
        let t = KeyTest { word: 3, mask: 0b0110, value: 0b0010 };
        assert!(t.eval(&key));
        key.words[3] = 0b1100;
        assert!(!t.eval(&key));
        // Value bits outside the mask do not matter.
        assert!(KeyTest { word: 3, mask: 0b1000, value: 0b1_1000 }.eval(&key));
        let mut wc = FlowMask::ZERO;
        wc.words[3] = 0b1_0000;
        t.unwildcard(&mut wc);
        assert_eq!(wc.words[3], 0b1_0110);
        assert_eq!(wc.words.iter().filter(|&&w| w != 0).count(), 1);
    }
}
