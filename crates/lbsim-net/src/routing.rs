//! Shortest-path routing with equal-cost next-hop groups.
//!
//! For every destination host, a breadth-first search over the links that
//! are up gives each node's hop distance; a node's next-hop group toward that
//! host is every up port leading to a neighbour one hop closer. Hosts never
//! forward. Parallel links are separate ports, so each is its own group
//! member. Groups are deduplicated (most (node, destination) pairs share one).
//! After a link failure the whole table is recomputed, which is what a
//! converged routing protocol would install (convergence delay: none).

use crate::ids::{NodeId, PortId};
use crate::topology::{NodeKind, Tier, Topology};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug)]
pub struct Routing {
    hosts: usize,
    /// (node × host) → group index
    table: Vec<u32>,
    groups: Vec<Vec<PortId>>,
    /// With lane pinning: per port, its lane if it is a spine port (in or
    /// out), else `u32::MAX`. Empty without pinning.
    pin_lane: Vec<u32>,
}

const UNREACHABLE: u32 = 0; // group 0 is the empty group

impl Routing {
    /// Computes routes over the links for which `link_up[link]` is true.
    pub fn compute(topo: &Topology, link_up: &[bool]) -> Routing {
        let n = topo.nodes.len();
        let h = topo.hosts.len();
        let mut table = vec![UNREACHABLE; n * h];
        let mut groups: Vec<Vec<PortId>> = vec![vec![]];
        let mut index: HashMap<Vec<PortId>, u32> = HashMap::new();
        index.insert(vec![], 0);
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        let mut grp = Vec::new();
        for (hi, &dst) in topo.hosts.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst.idx()] = 0;
            q.push_back(dst);
            while let Some(u) = q.pop_front() {
                let node = &topo.nodes[u.idx()];
                if node.kind == NodeKind::Host && u != dst {
                    continue; // hosts are not transit nodes
                }
                for &p in &node.ports {
                    let port = &topo.ports[p.idx()];
                    if !link_up[port.link.idx()] {
                        continue;
                    }
                    let v = topo.ports[port.peer.idx()].node;
                    if dist[v.idx()] == u32::MAX {
                        dist[v.idx()] = dist[u.idx()] + 1;
                        q.push_back(v);
                    }
                }
            }
            for (ni, node) in topo.nodes.iter().enumerate() {
                let d = dist[ni];
                if d == u32::MAX || d == 0 {
                    continue;
                }
                grp.clear();
                for &p in &node.ports {
                    let port = &topo.ports[p.idx()];
                    if !link_up[port.link.idx()] {
                        continue;
                    }
                    let v = topo.ports[port.peer.idx()].node;
                    let transit_ok = topo.nodes[v.idx()].kind == NodeKind::Switch || v == dst;
                    if transit_ok && dist[v.idx()] == d - 1 {
                        grp.push(p);
                    }
                }
                let gi = match index.get(&grp) {
                    Some(&g) => g,
                    None => {
                        let g = groups.len() as u32;
                        groups.push(grp.clone());
                        index.insert(grp.clone(), g);
                        g
                    }
                };
                table[ni * h + hi] = gi;
            }
        }
        let pin_lane = if topo.pin_lanes {
            topo.ports.iter().map(|p| if topo.nodes[p.node.idx()].tier == Tier::Spine { p.lane } else { u32::MAX }).collect()
        } else {
            vec![]
        };
        Routing { hosts: h, table, groups, pin_lane }
    }

    /// Equal-cost next hops from `node` toward host index `dst_host` (empty
    /// if unreachable).
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortId] {
        &self.groups[self.table[node.idx() * self.hosts + dst_host as usize] as usize]
    }

    /// Next hops for a packet that came in on `in_port` (a port of `node`).
    /// With lane pinning ([`Topology::pin_lanes`]) a spine offers only the
    /// next hop on the in-port's lane while that link is up (then any);
    /// otherwise the equal-cost group.
    #[inline]
    pub fn next_hops_from(&self, node: NodeId, in_port: PortId, dst_host: u32) -> &[PortId] {
        let g = self.next_hops(node, dst_host);
        if !self.pin_lane.is_empty() && g.len() > 1 {
            let lane = self.pin_lane[in_port.idx()];
            if lane != u32::MAX {
                if let Some(p) = g.iter().find(|p| self.pin_lane[p.idx()] == lane) {
                    return std::slice::from_ref(p);
                }
            }
        }
        g
    }

    /// Ports in the largest equal-cost group.
    pub fn widest_group(&self) -> usize {
        self.groups.iter().map(|g| g.len()).max().unwrap_or(0)
    }

    pub fn reachable(&self, node: NodeId, dst_host: u32) -> bool {
        self.table[node.idx() * self.hosts + dst_host as usize] != UNREACHABLE
    }

    /// The first pair of host indices (src, dst) with no route, if any.
    pub fn first_unreachable_pair(&self, topo: &Topology) -> Option<(u32, u32)> {
        for (s, &sn) in topo.hosts.iter().enumerate() {
            for d in 0..topo.hosts.len() {
                if s != d && !self.reachable(sn, d as u32) {
                    return Some((s as u32, d as u32));
                }
            }
        }
        None
    }

    /// Every equal-cost path from host `src` to host `dst` as port lists
    /// (for path discovery oracles and tests; exponential in general, small
    /// in the fabrics simulated).
    pub fn all_paths(&self, topo: &Topology, src: u32, dst: u32) -> Vec<Vec<PortId>> {
        let mut out: Vec<Vec<PortId>> = vec![];
        let mut stack: Vec<(NodeId, Vec<PortId>)> = vec![(topo.host(src), vec![])];
        while let Some((n, path)) = stack.pop() {
            if n == topo.host(dst) {
                out.push(path);
                continue;
            }
            let hops = match path.last() {
                Some(&last) => self.next_hops_from(n, topo.ports[last.idx()].peer, dst),
                None => self.next_hops(n, dst),
            };
            for &p in hops {
                let mut np: Vec<PortId> = path.clone();
                np.push(p);
                stack.push((topo.ports[topo.ports[p.idx()].peer.idx()].node, np));
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::*;
    use lbsim_engine::{BitsPerSec, SimTime};

    fn testbed() -> Topology {
        let s = |g| LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 2, hosts_per_leaf: vec![16, 16], host_link: s(10), fabric_link: s(40) }).unwrap()
    }

    #[test]
    fn leaf_has_four_uplinks_to_remote_hosts_and_one_port_to_local() {
        let t = testbed();
        let r = Routing::compute(&t, &vec![true; t.links.len()]);
        let l0 = t.node_by_name("L0").unwrap();
        assert_eq!(r.next_hops(l0, 20).len(), 4);
        assert_eq!(r.next_hops(l0, 3), &[t.nodes[l0.idx()].ports[3]]);
        let s0 = t.node_by_name("S0").unwrap();
        assert_eq!(r.next_hops(s0, 20).len(), 2, "two parallel downlinks");
        assert_eq!(r.all_paths(&t, 0, 20).len(), 8, "4 uplinks x 2 parallel downlinks");
        assert!(r.first_unreachable_pair(&t).is_none());
    }

    #[test]
    fn pinned_spines_keep_the_lane_and_give_four_disjoint_paths() {
        let mut t = testbed();
        t.pin_lanes = true;
        let r = Routing::compute(&t, &vec![true; t.links.len()]);
        let paths = r.all_paths(&t, 0, 20);
        assert_eq!(paths.len(), 4, "in-link k -> out-link k: 2 spines x 2 lanes");
        for p in &paths {
            // host->L0, L0->S#k, S->L1#k, L1->host: the two fabric hops share a lane
            assert_eq!(t.ports[p[1].idx()].lane, t.ports[p[2].idx()].lane, "{}", t.ports[p[2].idx()].name);
        }
        // the lane's link down: the spine falls back to the surviving one
        let mut up = vec![true; t.links.len()];
        up[t.match_links("L1-S1#0")[0].idx()] = false;
        let r = Routing::compute(&t, &up);
        let s1 = t.node_by_name("S1").unwrap();
        let in0 = t.ports[t.match_ports("L0->S1#0")[0].idx()].peer;
        let hops = r.next_hops_from(s1, in0, 20);
        assert_eq!(hops.len(), 1);
        assert_eq!(t.ports[hops[0].idx()].name, "S1->L1#1");
        assert_eq!(r.all_paths(&t, 0, 20).len(), 4, "both S1 lanes now share S1->L1#1");
    }

    #[test]
    fn failed_link_leaves_the_groups() {
        let t = testbed();
        let mut up = vec![true; t.links.len()];
        let failed = t.match_links("L1-S1#0")[0];
        up[failed.idx()] = false;
        let r = Routing::compute(&t, &up);
        let s1 = t.node_by_name("S1").unwrap();
        assert_eq!(r.next_hops(s1, 20).len(), 1);
        let l0 = t.node_by_name("L0").unwrap();
        assert_eq!(r.next_hops(l0, 20).len(), 4, "both spines still reach L1");
        for g in [r.next_hops(s1, 20), r.next_hops(l0, 20)] {
            assert!(g.iter().all(|p| t.ports[p.idx()].link != failed));
        }
    }

    #[test]
    fn cut_off_host_is_reported() {
        let t = testbed();
        let mut up = vec![true; t.links.len()];
        up[t.ports[t.nic(t.host(5)).idx()].link.idx()] = false;
        let r = Routing::compute(&t, &up);
        assert_eq!(r.first_unreachable_pair(&t), Some((0, 5)));
    }
}
