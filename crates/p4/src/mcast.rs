//! bmv2's multicast state as simple_switch_CLI builds it (shared by the
//! STF runner and `ctl`): nodes (a replication id and ports, handles
//! 0, 1, 2... in creation order) in groups; every change hands the
//! group's copies to [`Target::set_multicast_group`].

use std::collections::BTreeMap;

use crate::target::Target;

/// Groups of nodes, a node being a replication id and ports.
#[derive(Debug, Default)]
pub(crate) struct Multicast {
    nodes: Vec<(u32, Vec<u32>)>,
    groups: BTreeMap<u32, Vec<u32>>,
}

impl Multicast {
    pub(crate) fn create_group(&mut self, g: u32) -> Result<(), String> {
        if self.groups.insert(g, Vec::new()).is_some() {
            return Err(format!("mc_mgrp_create: group {g} exists already"));
        }
        Ok(())
    }

    /// A node of replication id `rid` on `ports`; its handle.
    pub(crate) fn create_node(&mut self, rid: u32, ports: &[u32]) -> u32 {
        self.nodes.push((rid, ports.to_vec()));
        self.nodes.len() as u32 - 1
    }

    fn copies(&self, g: u32) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for &n in &self.groups[&g] {
            let (rid, ports) = &self.nodes[n as usize];
            v.extend(ports.iter().map(|&p| (*rid, p)));
        }
        v
    }

    pub(crate) fn associate(
        &mut self,
        t: &mut dyn Target,
        g: u32,
        node: u32,
    ) -> Result<(), String> {
        if node as usize >= self.nodes.len() {
            return Err(format!(
                "mc_node_associate: no node {node} ({} created)",
                self.nodes.len()
            ));
        }
        let Some(members) = self.groups.get_mut(&g) else {
            return Err(format!("mc_node_associate: no group {g} (mc_mgrp_create it first)"));
        };
        if members.contains(&node) {
            return Err(format!("mc_node_associate: node {node} is in group {g} already"));
        }
        members.push(node);
        t.set_multicast_group(g, &self.copies(g)).map_err(|e| format!("multicast group {g}: {e}"))
    }

    pub(crate) fn update_node(
        &mut self,
        t: &mut dyn Target,
        node: u32,
        ports: &[u32],
    ) -> Result<(), String> {
        let Some(n) = self.nodes.get_mut(node as usize) else {
            return Err(format!("mc_node_update: no node {node}"));
        };
        n.1 = ports.to_vec();
        let groups: Vec<u32> =
            self.groups.iter().filter(|(_, m)| m.contains(&node)).map(|(g, _)| *g).collect();
        for g in groups {
            t.set_multicast_group(g, &self.copies(g))
                .map_err(|e| format!("multicast group {g}: {e}"))?;
        }
        Ok(())
    }
}
