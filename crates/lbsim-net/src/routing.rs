//! Shortest-path routing with equal-cost next-hop groups.
//!
//! Hosts never forward, so the routes toward a host depend only on the set
//! of nodes it is attached to (its ToR, in every generated topology): hosts
//! with the same attachment share one *class*. For every class, a
//! breadth-first search from the attachment nodes over the links that are up
//! gives each node's hop distance; a node's next-hop group toward the class
//! is every up port leading to a switch one hop closer. A node attached to
//! the destination itself uses its direct port(s) to that host, kept per
//! host. Parallel links are separate ports, so each is its own group member.
//! Groups are deduplicated. The table is nodes × classes (a fat-tree's
//! classes are its ToRs), not nodes × hosts. After a link failure the whole
//! table is recomputed, which is what a converged routing protocol would
//! install (convergence delay: none).

use crate::ids::{NodeId, PortId};
use crate::topology::{NodeKind, Tier, Topology};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug)]
pub struct Routing {
    classes: usize,
    /// Host index → attachment class.
    class_of: Vec<u32>,
    /// (node × class) → group index, or `DIRECT` for a node attached to
    /// the class's hosts.
    table: Vec<u32>,
    /// Per host, its attached nodes' direct groups: `direct[direct_at[h]..
    /// direct_at[h + 1]]` as (node, group).
    direct_at: Vec<u32>,
    direct: Vec<(NodeId, u32)>,
    groups: Vec<Vec<PortId>>,
    /// Host index → its node.
    host_node: Vec<NodeId>,
    /// With lane pinning: per port, its lane if it is a spine port (in or
    /// out), else `u32::MAX`. Empty without pinning.
    pin_lane: Vec<u32>,
}

const UNREACHABLE: u32 = 0; // group 0 is the empty group
const DIRECT: u32 = u32::MAX;

/// Interns port groups: equal groups get one index.
struct Groups {
    groups: Vec<Vec<PortId>>,
    index: HashMap<Vec<PortId>, u32>,
}

impl Groups {
    fn intern(&mut self, grp: &[PortId]) -> u32 {
        if let Some(&g) = self.index.get(grp) {
            return g;
        }
        let g = self.groups.len() as u32;
        self.groups.push(grp.to_vec());
        self.index.insert(grp.to_vec(), g);
        g
    }
}

impl Routing {
    /// Computes routes over the links for which `link_up[link]` is true.
    pub fn compute(topo: &Topology, link_up: &[bool]) -> Routing {
        let n = topo.nodes.len();
        let up_peer = |p: PortId| -> Option<NodeId> {
            let port = &topo.ports[p.idx()];
            link_up[port.link.idx()].then(|| topo.ports[port.peer.idx()].node)
        };
        // attachment classes
        let mut class_index: HashMap<Vec<NodeId>, u32> = HashMap::new();
        let mut attach_sets: Vec<Vec<NodeId>> = vec![];
        let mut class_of = Vec::with_capacity(topo.hosts.len());
        for &h in &topo.hosts {
            let mut a: Vec<NodeId> = topo.nodes[h.idx()].ports.iter().filter_map(|&p| up_peer(p)).collect();
            a.sort();
            a.dedup();
            let c = *class_index.entry(a.clone()).or_insert_with(|| {
                attach_sets.push(a);
                attach_sets.len() as u32 - 1
            });
            class_of.push(c);
        }
        let classes = attach_sets.len();
        let mut g = Groups { groups: vec![vec![]], index: HashMap::new() };
        g.index.insert(vec![], UNREACHABLE);
        let mut table = vec![UNREACHABLE; n * classes];
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        // each node's group for the previous class: a node mostly keeps its
        // group from one destination to the next (a host its NIC, a leaf its
        // uplinks), and comparing it is cheaper than hashing
        let mut last = vec![UNREACHABLE; n];
        // the up links as one compact adjacency list (per node, in port
        // order: (port, far node)), read once per destination class; the
        // port records it replaces are scattered and several times larger
        let mut adj_at = Vec::with_capacity(n + 1);
        let mut adj: Vec<(PortId, NodeId)> = Vec::with_capacity(topo.ports.len());
        for node in &topo.nodes {
            adj_at.push(adj.len());
            adj.extend(node.ports.iter().filter_map(|&p| up_peer(p).map(|v| (p, v))));
        }
        adj_at.push(adj.len());
        let is_switch: Vec<bool> = topo.nodes.iter().map(|x| x.kind == NodeKind::Switch).collect();
        // per class: each reached node's group, as a span of `gbuf`
        let mut gbuf: Vec<PortId> = Vec::new();
        let mut span = vec![(0u32, 0u32); n];
        for (c, attach) in attach_sets.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            gbuf.clear();
            for &a in attach {
                dist[a.idx()] = 1;
                q.push_back(a);
            }
            // Breadth first: labels are final when set and the queue's
            // distances only grow, so when a node is taken from the queue
            // every node one hop nearer is labelled; one pass over its links
            // both labels the nodes beyond it and collects its group (its up
            // ports to switches one hop nearer, in port order). An unlabelled
            // neighbour is handled first, so `dv + 1` never overflows.
            while let Some(u) = q.pop_front() {
                let du = dist[u.idx()];
                let transit = is_switch[u.idx()]; // hosts are not transit nodes
                let start = gbuf.len() as u32;
                for &(p, v) in &adj[adj_at[u.idx()]..adj_at[u.idx() + 1]] {
                    let dv = dist[v.idx()];
                    if dv == u32::MAX {
                        if transit {
                            dist[v.idx()] = du + 1;
                            q.push_back(v);
                        }
                    } else if dv + 1 == du && is_switch[v.idx()] {
                        gbuf.push(p);
                    }
                }
                span[u.idx()] = (start, gbuf.len() as u32);
            }
            // groups interned in node order (the order group ids follow)
            for ni in 0..n {
                let d = dist[ni];
                if d == u32::MAX {
                    continue;
                }
                if d == 1 {
                    table[ni * classes + c] = DIRECT;
                    continue;
                }
                let grp = &gbuf[span[ni].0 as usize..span[ni].1 as usize];
                let id = if g.groups[last[ni] as usize] == grp { last[ni] } else { g.intern(grp) };
                last[ni] = id;
                table[ni * classes + c] = id;
            }
        }
        // direct groups: from each attached node, its up ports to the host
        let mut grp = Vec::new();
        let mut direct_at = Vec::with_capacity(topo.hosts.len() + 1);
        let mut direct = vec![];
        for (hi, &h) in topo.hosts.iter().enumerate() {
            direct_at.push(direct.len() as u32);
            for &a in &attach_sets[class_of[hi] as usize] {
                grp.clear();
                grp.extend(topo.nodes[a.idx()].ports.iter().copied().filter(|&p| up_peer(p) == Some(h)));
                direct.push((a, g.intern(&grp)));
            }
        }
        direct_at.push(direct.len() as u32);
        let pin_lane = if topo.pin_lanes {
            topo.ports.iter().map(|p| if topo.nodes[p.node.idx()].tier == Tier::Spine { p.lane } else { u32::MAX }).collect()
        } else {
            vec![]
        };
        Routing { classes, class_of, table, direct_at, direct, groups: g.groups, host_node: topo.hosts.clone(), pin_lane }
    }

    /// Where `table` holds the route from `node` toward host index `h`.
    #[inline]
    fn table_index(&self, node: NodeId, h: usize) -> usize {
        self.class_index(node, self.class_of[h] as usize)
    }

    /// Where `table` holds the route from `node` toward attachment class `c`.
    #[inline]
    fn class_index(&self, node: NodeId, c: usize) -> usize {
        node.idx() * self.classes + c
    }

    #[inline]
    fn group(&self, node: NodeId, dst_host: u32) -> u32 {
        let h = dst_host as usize;
        match self.table[self.table_index(node, h)] {
            DIRECT => {
                let (a, b) = (self.direct_at[h] as usize, self.direct_at[h + 1] as usize);
                self.direct[a..b].iter().find(|(n, _)| *n == node).map_or(UNREACHABLE, |&(_, g)| g)
            }
            _ if node == self.host_node[h] => UNREACHABLE,
            g => g,
        }
    }

    /// Prefetches the table entry `next_hops(node, dst_host)` will read.
    #[inline]
    pub fn prefetch(&self, node: NodeId, dst_host: u32) {
        lbsim_engine::prefetch(&self.table[self.table_index(node, dst_host as usize)]);
    }

    /// Equal-cost next hops from `node` toward host index `dst_host` (empty
    /// if unreachable, or if `node` is that host).
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst_host: u32) -> &[PortId] {
        &self.groups[self.group(node, dst_host) as usize]
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
        self.group(node, dst_host) != UNREACHABLE
    }

    /// The first pair of host indices (src, dst) with no route, if any.
    ///
    /// Routes are per attachment class, so a source needs one look per
    /// class, not per host: O(hosts × classes), where asking every pair was
    /// O(hosts²) (67 M lookups at 8,192 hosts).
    pub fn first_unreachable_pair(&self, topo: &Topology) -> Option<(u32, u32)> {
        let mut members = vec![vec![]; self.classes];
        for (d, &c) in self.class_of.iter().enumerate() {
            members[c as usize].push(d as u32);
        }
        for (s, &sn) in topo.hosts.iter().enumerate() {
            let s = s as u32;
            let mut first = None::<u32>;
            for (c, m) in members.iter().enumerate() {
                let d = match self.table[self.class_index(sn, c)] {
                    // every host of the class, but the source itself
                    UNREACHABLE => m.iter().copied().find(|&d| d != s),
                    // a host attached to the class's hosts: cannot happen
                    // (the topology rejects host-to-host links), so this
                    // per-host answer is untested
                    DIRECT => m.iter().copied().find(|&d| d != s && !self.reachable(sn, d)),
                    // a route: every host of the class is reachable
                    _ => None,
                };
                if let Some(d) = d {
                    first = Some(first.map_or(d, |f| f.min(d)));
                }
            }
            if let Some(d) = first {
                return Some((s, d));
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

    /// The definition, one breadth-first search per destination host:
    /// hop distances to `dst` (hosts not transit), next hops = up ports to a
    /// neighbour one hop closer that is a switch or `dst` itself.
    fn reference(t: &Topology, up: &[bool], src: NodeId, dst: u32) -> Vec<PortId> {
        let dn = t.host(dst);
        let mut dist = vec![u32::MAX; t.nodes.len()];
        dist[dn.idx()] = 0;
        let mut q = std::collections::VecDeque::from([dn]);
        while let Some(u) = q.pop_front() {
            if t.nodes[u.idx()].kind == NodeKind::Host && u != dn {
                continue;
            }
            for &p in &t.nodes[u.idx()].ports {
                let v = t.ports[t.ports[p.idx()].peer.idx()].node;
                if up[t.ports[p.idx()].link.idx()] && dist[v.idx()] == u32::MAX {
                    dist[v.idx()] = dist[u.idx()] + 1;
                    q.push_back(v);
                }
            }
        }
        let d = dist[src.idx()];
        if d == 0 || d == u32::MAX {
            return vec![];
        }
        let ok = |v: NodeId| t.nodes[v.idx()].kind == NodeKind::Switch || v == dn;
        t.nodes[src.idx()]
            .ports
            .iter()
            .copied()
            .filter(|p| {
                let v = t.ports[t.ports[p.idx()].peer.idx()].node;
                up[t.ports[p.idx()].link.idx()] && ok(v) && dist[v.idx()] == d - 1
            })
            .collect()
    }

    #[test]
    fn per_class_tables_match_per_host_search_on_a_fat_tree_with_failures() {
        let s = |g| LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        let t = fat_tree(4, s(10), s(10)).unwrap();
        let mut up = vec![true; t.links.len()];
        let r = Routing::compute(&t, &up);
        assert_eq!(r.table.len(), t.nodes.len() * t.racks.len(), "one column per ToR, not per host");
        // fail a ToR uplink, a core link and one host's access link
        for name in ["T0_0-A0_0", "A1_1-C3", "H5-T1_0"] {
            let l = t.match_links(name);
            assert_eq!(l.len(), 1, "{name}");
            up[l[0].idx()] = false;
        }
        let r2 = Routing::compute(&t, &up);
        for (rr, u) in [(&r, vec![true; t.links.len()]), (&r2, up.clone())] {
            for n in 0..t.nodes.len() {
                for h in 0..t.num_hosts() as u32 {
                    let want = reference(&t, &u, NodeId(n as u32), h);
                    assert_eq!(rr.next_hops(NodeId(n as u32), h), want.as_slice(), "{} -> host {h}", t.nodes[n].name);
                }
            }
        }
        assert!(r2.first_unreachable_pair(&t).is_some(), "H5 is cut off");
    }

    #[test]
    fn first_unreachable_pair_matches_asking_every_pair() {
        let pairwise = |r: &Routing, t: &Topology| {
            (0..t.num_hosts() as u32).flat_map(|s| (0..t.num_hosts() as u32).map(move |d| (s, d))).find(|&(s, d)| s != d && !r.reachable(t.host(s), d))
        };
        let sp = LinkSpec { rate: BitsPerSec::gbps(10), delay: SimTime::from_us(1) };
        // a fat-tree, and an explicit ring of three switches with one or
        // two hosts each
        let n = |s: &str, host| crate::topology::ExplicitNode { name: s.into(), host };
        let l = |a: &str, b: &str| crate::topology::ExplicitLink { a: a.into(), b: b.into(), spec: sp, count: 1 };
        let explicit = Topology::explicit(
            &[n("h0", true), n("h1", true), n("h2", true), n("h3", true), n("s0", false), n("s1", false), n("s2", false)],
            &[l("h0", "s0"), l("h1", "s0"), l("h2", "s1"), l("h3", "s2"), l("s0", "s1"), l("s1", "s2"), l("s0", "s2")],
        )
        .unwrap();
        let mut rng = lbsim_engine::Rng::from_seed(7);
        let mut found = 0;
        for t in [fat_tree(4, sp, sp).unwrap(), explicit] {
            for trial in 0..300 {
                let mut up = vec![true; t.links.len()];
                for _ in 0..trial % 6 {
                    up[rng.below(t.links.len() as u64) as usize] = false;
                }
                let r = Routing::compute(&t, &up);
                let want = pairwise(&r, &t);
                assert_eq!(r.first_unreachable_pair(&t), want, "trial {trial}, down {:?}", (0..up.len()).filter(|&i| !up[i]).collect::<Vec<_>>());
                found += want.is_some() as u32;
            }
        }
        assert!(found > 100, "{found} trials cut a host off");
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
