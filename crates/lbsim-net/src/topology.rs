//! Topologies: nodes, ports and full-duplex links, and the builders for the
//! fabrics the five papers use.
//!
//! - [`leaf_spine`]: CONGA Fig. 7 / Clove Fig. 4a (2 leaves, 2 spines, two
//!   40G links per pair), AG's 8×8 with uneven hosts per leaf, Expeditus'
//!   8×8; parallel links between one leaf and one spine are distinct ports,
//!   hence distinct ECMP members.
//! - [`clos3`]: the 3-tier Clos of Expeditus §6 (pods, ToRs and aggregation
//!   switches per pod, core planes), where core or ToR oversubscription is
//!   set by the counts; [`fat_tree`] is its k-ary special case.
//! - [`Topology::explicit`]: any node/link list.
//!
//! Hosts are numbered 0..H−1 in rack order (rack = the host's ToR/leaf);
//! flow lists and results use these numbers.

use crate::ids::{LinkId, NodeId, PortId};
use lbsim_engine::{BitsPerSec, SimTime};
use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

/// Where an egress port sits (see [`Topology::port_place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortPlace {
    HostNic,
    ToHost,
    Fabric,
}

/// A switch's place in the fabric (schemes that act at a tier ask this).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Host,
    /// Leaf / top-of-rack.
    Leaf,
    /// Spine (2-tier) or aggregation (3-tier).
    Spine,
    Core,
    /// A switch of an explicit topology that has hosts attached is a
    /// `Leaf`; any other explicit switch is `Other`.
    Other,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub tier: Tier,
    /// Pod (3-tier), else 0.
    pub pod: u32,
    /// Egress ports of this node.
    pub ports: Vec<PortId>,
    /// For a host: its index 0..H−1. For a leaf or ToR (a switch with
    /// hosts): its rack index. For a spine: its index; for an aggregation
    /// switch: its plane (position in its pod); for a core: its index; for
    /// any other switch of an explicit topology: 0. Uplinks are numbered by
    /// it ([`Topology::uplink_index`]).
    pub index: u32,
}

#[derive(Clone, Debug)]
pub struct Port {
    pub node: NodeId,
    /// The port facing this one (its reverse direction).
    pub peer: PortId,
    pub link: LinkId,
    pub rate: BitsPerSec,
    /// Propagation delay of this direction.
    pub delay: SimTime,
    /// "A->B#k"
    pub name: String,
    /// k: which of the parallel links between the same two nodes this is.
    pub lane: u32,
}

#[derive(Clone, Debug)]
pub struct Link {
    pub ports: [PortId; 2],
    /// "A-B#k"
    pub name: String,
}

#[derive(Clone, Debug)]
pub struct Topology {
    /// Port lists are fixed once built (see `first_port`).
    pub nodes: Vec<Node>,
    pub ports: Vec<Port>,
    pub links: Vec<Link>,
    /// Host index → node.
    pub hosts: Vec<NodeId>,
    /// Rack index → leaf/ToR node.
    pub racks: Vec<NodeId>,
    /// Host index → rack index.
    pub host_rack: Vec<u32>,
    /// Node index → host index (u32::MAX for switches).
    pub node_host: Vec<u32>,
    /// Node index → its first port (a host's NIC), so the per-packet path
    /// finds a NIC with one lookup instead of two dependent ones. Filled by
    /// the builder: a node's port list must not change after construction
    /// (release builds do not check that this copy still matches).
    first_port: Vec<PortId>,
    pub kind: String,
    /// Lane pinning at spines: a packet that came in on parallel link k
    /// leaves on parallel link k toward its destination leaf (the Clove
    /// testbed's static spine routes: 2 leaves × 2 spines × 2 links = 4
    /// disjoint paths), instead of re-hashing over the parallel links.
    pub pin_lanes: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TopologyError {
    pub field: String,
    pub msg: String,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.msg)
    }
}
impl std::error::Error for TopologyError {}

fn err(field: &str, msg: impl Into<String>) -> TopologyError {
    TopologyError { field: field.to_string(), msg: msg.into() }
}

/// Link rate and delay of one class of links.
#[derive(Clone, Copy, Debug)]
pub struct LinkSpec {
    pub rate: BitsPerSec,
    pub delay: SimTime,
}

#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    ports: Vec<Port>,
    links: Vec<Link>,
    names: HashMap<String, NodeId>,
    pair_count: HashMap<(u32, u32), u32>,
}

impl Builder {
    fn node(&mut self, name: String, kind: NodeKind, tier: Tier, pod: u32, index: u32) -> Result<NodeId, TopologyError> {
        let id = NodeId(self.nodes.len() as u32);
        if self.names.insert(name.clone(), id).is_some() {
            return Err(err("topology.nodes", format!("duplicate node name {name:?}")));
        }
        self.nodes.push(Node { name, kind, tier, pod, ports: vec![], index });
        Ok(id)
    }

    fn link(&mut self, a: NodeId, b: NodeId, spec: LinkSpec) {
        let key = (a.0.min(b.0), a.0.max(b.0));
        let k = *self.pair_count.entry(key).and_modify(|c| *c += 1).or_insert(0);
        let (na, nb) = (self.nodes[a.idx()].name.clone(), self.nodes[b.idx()].name.clone());
        let lid = LinkId(self.links.len() as u32);
        let pa = PortId(self.ports.len() as u32);
        let pb = PortId(pa.0 + 1);
        self.ports.push(Port { node: a, peer: pb, link: lid, rate: spec.rate, delay: spec.delay, name: format!("{na}->{nb}#{k}"), lane: k });
        self.ports.push(Port { node: b, peer: pa, link: lid, rate: spec.rate, delay: spec.delay, name: format!("{nb}->{na}#{k}"), lane: k });
        self.nodes[a.idx()].ports.push(pa);
        self.nodes[b.idx()].ports.push(pb);
        self.links.push(Link { ports: [pa, pb], name: format!("{na}-{nb}#{k}") });
    }

    fn finish(self, kind: &str) -> Result<Topology, TopologyError> {
        let mut hosts = vec![];
        let mut node_host = vec![u32::MAX; self.nodes.len()];
        let mut racks: Vec<NodeId> = vec![];
        let mut host_rack = vec![];
        let mut rack_of_leaf: HashMap<NodeId, u32> = HashMap::new();
        let mut nodes = self.nodes;
        // hosts in creation order, which every builder makes rack order
        for i in 0..nodes.len() {
            if nodes[i].kind != NodeKind::Host {
                continue;
            }
            let ports = &nodes[i].ports;
            if ports.len() != 1 {
                return Err(err("topology", format!("host {} must have exactly one link, has {}", nodes[i].name, ports.len())));
            }
            let tor = self.ports[self.ports[ports[0].idx()].peer.idx()].node;
            if nodes[tor.idx()].kind != NodeKind::Switch {
                return Err(err("topology", format!("host {} is linked to another host", nodes[i].name)));
            }
            let r = *rack_of_leaf.entry(tor).or_insert_with(|| {
                racks.push(tor);
                (racks.len() - 1) as u32
            });
            node_host[i] = hosts.len() as u32;
            nodes[i].index = hosts.len() as u32;
            host_rack.push(r);
            hosts.push(NodeId(i as u32));
        }
        for (r, &tor) in racks.iter().enumerate() {
            nodes[tor.idx()].index = r as u32;
            if nodes[tor.idx()].tier == Tier::Other {
                nodes[tor.idx()].tier = Tier::Leaf;
            }
        }
        // rack order check: hosts of a rack must be contiguous and racks ascending
        for w in host_rack.windows(2) {
            if w[1] < w[0] {
                return Err(err("topology", "hosts must be listed rack by rack (all hosts of one leaf together)"));
            }
        }
        if hosts.is_empty() {
            return Err(err("topology", "no hosts"));
        }
        let first_port = nodes.iter().map(|n| n.ports.first().copied().unwrap_or(PortId(u32::MAX))).collect();
        Ok(Topology { nodes, ports: self.ports, links: self.links, hosts, racks, host_rack, node_host, first_port, kind: kind.to_string(), pin_lanes: false })
    }
}

/// Parameters of a 2-tier leaf-spine fabric.
#[derive(Clone, Debug)]
pub struct LeafSpine {
    pub leaves: u32,
    pub spines: u32,
    /// Parallel links between each leaf and each spine.
    pub links_per_pair: u32,
    /// Hosts under each leaf (one entry per leaf).
    pub hosts_per_leaf: Vec<u32>,
    pub host_link: LinkSpec,
    pub fabric_link: LinkSpec,
}

pub fn leaf_spine(p: &LeafSpine) -> Result<Topology, TopologyError> {
    if p.leaves == 0 {
        return Err(err("topology.leaves", "must be at least 1"));
    }
    if p.spines == 0 {
        return Err(err("topology.spines", "must be at least 1"));
    }
    if p.links_per_pair == 0 {
        return Err(err("topology.links_per_pair", "must be at least 1"));
    }
    if p.hosts_per_leaf.len() != p.leaves as usize {
        return Err(err("topology.hosts_per_leaf", format!("has {} entries for {} leaves", p.hosts_per_leaf.len(), p.leaves)));
    }
    let mut b = Builder::default();
    let mut h = 0;
    let mut leaves = vec![];
    for l in 0..p.leaves {
        let leaf = b.node(format!("L{l}"), NodeKind::Switch, Tier::Leaf, 0, l)?;
        leaves.push(leaf);
        for _ in 0..p.hosts_per_leaf[l as usize] {
            let host = b.node(format!("H{h}"), NodeKind::Host, Tier::Host, 0, h)?;
            b.link(host, leaf, p.host_link);
            h += 1;
        }
    }
    let spines: Vec<NodeId> = (0..p.spines).map(|s| b.node(format!("S{s}"), NodeKind::Switch, Tier::Spine, 0, s)).collect::<Result<_, _>>()?;
    for &leaf in &leaves {
        for &sp in &spines {
            for _ in 0..p.links_per_pair {
                b.link(leaf, sp, p.fabric_link);
            }
        }
    }
    b.finish("leaf_spine")
}

/// Parameters of a 3-tier Clos (Expeditus §6): `pods` pods of
/// `tors_per_pod` ToRs and `aggs_per_pod` aggregation switches (full
/// bipartite inside a pod), and `cores` core switches in `aggs_per_pod`
/// planes: aggregation switch j of every pod links to the cores of plane j.
#[derive(Clone, Debug)]
pub struct Clos3 {
    pub pods: u32,
    pub tors_per_pod: u32,
    pub aggs_per_pod: u32,
    pub cores: u32,
    pub hosts_per_tor: u32,
    pub host_link: LinkSpec,
    pub tor_agg_link: LinkSpec,
    pub agg_core_link: LinkSpec,
}

pub fn clos3(p: &Clos3) -> Result<Topology, TopologyError> {
    for (f, v) in [
        ("topology.pods", p.pods),
        ("topology.tors_per_pod", p.tors_per_pod),
        ("topology.aggs_per_pod", p.aggs_per_pod),
        ("topology.hosts_per_tor", p.hosts_per_tor),
    ] {
        if v == 0 {
            return Err(err(f, "must be at least 1"));
        }
    }
    if p.cores == 0 || !p.cores.is_multiple_of(p.aggs_per_pod) {
        return Err(err("topology.cores", format!("must be a positive multiple of aggs_per_pod ({}), got {}", p.aggs_per_pod, p.cores)));
    }
    let per_plane = p.cores / p.aggs_per_pod;
    let mut b = Builder::default();
    let mut h = 0;
    let mut aggs = vec![];
    for pod in 0..p.pods {
        let mut tors = vec![];
        for t in 0..p.tors_per_pod {
            let tor = b.node(format!("T{pod}_{t}"), NodeKind::Switch, Tier::Leaf, pod, 0)?;
            tors.push(tor);
            for _ in 0..p.hosts_per_tor {
                let host = b.node(format!("H{h}"), NodeKind::Host, Tier::Host, pod, h)?;
                b.link(host, tor, p.host_link);
                h += 1;
            }
        }
        let pod_aggs: Vec<NodeId> =
            (0..p.aggs_per_pod).map(|a| b.node(format!("A{pod}_{a}"), NodeKind::Switch, Tier::Spine, pod, a)).collect::<Result<_, _>>()?;
        for &tor in &tors {
            for &agg in &pod_aggs {
                b.link(tor, agg, p.tor_agg_link);
            }
        }
        aggs.push(pod_aggs);
    }
    let cores: Vec<NodeId> = (0..p.cores).map(|c| b.node(format!("C{c}"), NodeKind::Switch, Tier::Core, 0, c)).collect::<Result<_, _>>()?;
    for pod_aggs in &aggs {
        for (j, &agg) in pod_aggs.iter().enumerate() {
            for c in 0..per_plane {
                b.link(agg, cores[(j as u32 * per_plane + c) as usize], p.agg_core_link);
            }
        }
    }
    b.finish("clos3")
}

/// The k-ary fat-tree (Al-Fares et al.): k pods of k/2 ToRs and k/2
/// aggregation switches, (k/2)² cores, k/2 hosts per ToR.
pub fn fat_tree(k: u32, host_link: LinkSpec, fabric_link: LinkSpec) -> Result<Topology, TopologyError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(err("topology.k", format!("must be an even number >= 2, got {k}")));
    }
    let mut t = clos3(&Clos3 {
        pods: k,
        tors_per_pod: k / 2,
        aggs_per_pod: k / 2,
        cores: (k / 2) * (k / 2),
        hosts_per_tor: k / 2,
        host_link,
        tor_agg_link: fabric_link,
        agg_core_link: fabric_link,
    })?;
    t.kind = "fat_tree".into();
    Ok(t)
}

/// One node of an explicit topology.
#[derive(Clone, Debug)]
pub struct ExplicitNode {
    pub name: String,
    pub host: bool,
}

/// One (possibly multiple) link of an explicit topology.
#[derive(Clone, Debug)]
pub struct ExplicitLink {
    pub a: String,
    pub b: String,
    pub spec: LinkSpec,
    pub count: u32,
}

impl Topology {
    /// A topology from node and link lists. Hosts must be listed rack by rack.
    pub fn explicit(nodes: &[ExplicitNode], links: &[ExplicitLink]) -> Result<Topology, TopologyError> {
        let mut b = Builder::default();
        for n in nodes {
            let (kind, tier) = if n.host { (NodeKind::Host, Tier::Host) } else { (NodeKind::Switch, Tier::Other) };
            b.node(n.name.clone(), kind, tier, 0, 0)?;
        }
        for (i, l) in links.iter().enumerate() {
            let a = *b.names.get(&l.a).ok_or_else(|| err(&format!("topology.links[{i}].a"), format!("unknown node {:?}", l.a)))?;
            let bb = *b.names.get(&l.b).ok_or_else(|| err(&format!("topology.links[{i}].b"), format!("unknown node {:?}", l.b)))?;
            if a == bb {
                return Err(err(&format!("topology.links[{i}]"), "a link must join two different nodes"));
            }
            if l.count == 0 {
                return Err(err(&format!("topology.links[{i}].count"), "must be at least 1 (a link that is not there is left out of the list)"));
            }
            for _ in 0..l.count {
                b.link(a, bb, l.spec);
            }
        }
        b.finish("explicit")
    }

    pub fn num_hosts(&self) -> usize {
        self.hosts.len()
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }
    pub fn port(&self, id: PortId) -> &Port {
        &self.ports[id.idx()]
    }
    pub fn host(&self, h: u32) -> NodeId {
        self.hosts[h as usize]
    }
    pub fn host_index(&self, n: NodeId) -> u32 {
        self.node_host[n.idx()]
    }
    pub fn is_host(&self, n: NodeId) -> bool {
        self.node_host[n.idx()] != u32::MAX
    }
    /// The leaf/ToR node a host hangs off.
    pub fn leaf_of_host(&self, host: NodeId) -> NodeId {
        let p = self.nodes[host.idx()].ports[0];
        self.ports[self.ports[p.idx()].peer.idx()].node
    }
    /// The host's access port (its NIC).
    #[inline]
    pub fn nic(&self, host: NodeId) -> PortId {
        debug_assert_eq!(self.first_port[host.idx()], self.nodes[host.idx()].ports[0]);
        self.first_port[host.idx()]
    }
    /// Host indices of a rack.
    pub fn rack_hosts(&self, rack: u32) -> impl Iterator<Item = u32> + '_ {
        self.host_rack.iter().enumerate().filter(move |(_, &r)| r == rack).map(|(h, _)| h as u32)
    }
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| NodeId(i as u32))
    }
    /// Whether `port` leads from a leaf up into the fabric.
    /// Where an egress port sits: a host's NIC, a switch port toward a
    /// host, or a switch-to-switch (fabric) port.
    pub fn port_place(&self, port: PortId) -> PortPlace {
        let p = &self.ports[port.idx()];
        if self.is_host(p.node) {
            PortPlace::HostNic
        } else if self.is_host(self.ports[p.peer.idx()].node) {
            PortPlace::ToHost
        } else {
            PortPlace::Fabric
        }
    }

    /// Per port, whether it is a switch-to-switch port (indexed by `PortId`).
    pub fn fabric_ports(&self) -> Vec<bool> {
        (0..self.ports.len()).map(|i| self.port_place(PortId(i as u32)) == PortPlace::Fabric).collect()
    }

    pub fn is_uplink(&self, port: PortId) -> bool {
        let p = &self.ports[port.idx()];
        let from = &self.nodes[p.node.idx()];
        let to = &self.nodes[self.ports[p.peer.idx()].node.idx()];
        let rank = |t: Tier| match t {
            Tier::Host => 0,
            Tier::Leaf => 1,
            Tier::Spine | Tier::Other => 2,
            Tier::Core => 3,
        };
        from.kind == NodeKind::Switch && rank(to.tier) > rank(from.tier)
    }

    /// Every switch's uplinks numbered alike at every switch of its tier:
    /// ordered by the index of the switch they lead to (then its node id,
    /// for explicit topologies, whose other switches all have index 0), then
    /// by lane. In a leaf-spine fabric with one link per pair entry j of a
    /// leaf is spine j; in a 3-tier one entry j of a ToR is aggregation
    /// plane j of its pod, and entry j of an aggregation switch its j-th
    /// core (the same core for every switch of that plane). So in a
    /// generated fabric an uplink index names the same switch at both ends
    /// of a path: the meaning of a path tag (CONGA's LBTag, AG's path
    /// index, Expeditus' congestion-data entries). Returns, per node, its
    /// uplinks in that order, and per port its position (`u32::MAX` for a
    /// port that is not an uplink).
    pub fn uplink_index(&self) -> (Vec<Vec<PortId>>, Vec<u32>) {
        let mut uplinks = vec![vec![]; self.nodes.len()];
        let mut index = vec![u32::MAX; self.ports.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            let mut ups: Vec<PortId> = n.ports.iter().copied().filter(|&p| self.is_uplink(p)).collect();
            ups.sort_by_key(|&p| {
                let peer = self.ports[self.ports[p.idx()].peer.idx()].node;
                (self.nodes[peer.idx()].index, peer, self.ports[p.idx()].lane)
            });
            for (j, &p) in ups.iter().enumerate() {
                index[p.idx()] = j as u32;
            }
            uplinks[i] = ups;
        }
        (uplinks, index)
    }

    /// [`Topology::uplink_index`] for racks only: per leaf (rack index) its
    /// uplinks, and per port its position among its leaf's uplinks
    /// (`u32::MAX` for any other port).
    pub fn leaf_uplinks(&self) -> (Vec<Vec<PortId>>, Vec<u32>) {
        let (mut by_node, mut index) = self.uplink_index();
        let mut rack = vec![false; self.nodes.len()];
        self.racks.iter().for_each(|r| rack[r.idx()] = true);
        for (i, ups) in by_node.iter().enumerate() {
            if !rack[i] {
                ups.iter().for_each(|p| index[p.idx()] = u32::MAX);
            }
        }
        (self.racks.iter().map(|r| std::mem::take(&mut by_node[r.idx()])).collect(), index)
    }

    /// Ports whose name matches `pattern` (`*` and `?` wildcards; a link name
    /// "A-B#k" selects both directions, a port name "A->B#k" one; a name
    /// without "#k" selects every parallel link).
    pub fn match_ports(&self, pattern: &str) -> Vec<PortId> {
        let pat = if pattern.contains('#') { pattern.to_string() } else { format!("{pattern}#*") };
        let mut v = vec![];
        if pat.contains("->") {
            for (i, p) in self.ports.iter().enumerate() {
                if glob(&pat, &p.name) {
                    v.push(PortId(i as u32));
                }
            }
        } else {
            for l in &self.links {
                let (a, b) = (&self.ports[l.ports[0].idx()], &self.ports[l.ports[1].idx()]);
                // accept either orientation of the link name
                let rev = {
                    let (na, nb) = (&self.nodes[a.node.idx()].name, &self.nodes[b.node.idx()].name);
                    let k = l.name.rsplit('#').next().unwrap_or("0");
                    format!("{nb}-{na}#{k}")
                };
                if glob(&pat, &l.name) || glob(&pat, &rev) {
                    v.extend(l.ports);
                }
            }
        }
        v
    }

    /// Links whose name matches (see [`Topology::match_ports`]).
    pub fn match_links(&self, pattern: &str) -> Vec<LinkId> {
        let mut v: Vec<LinkId> = self.match_ports(pattern).into_iter().map(|p| self.ports[p.idx()].link).collect();
        v.dedup();
        v
    }
}

/// Minimal glob: `*` any run, `?` one character.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0usize, 0usize, usize::MAX, 0usize);
    while j < s.len() {
        if i < p.len() && (p[i] == '?' || p[i] == s[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = i;
            mark = j;
            i += 1;
        } else if star != usize::MAX {
            i = star + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(g: u64) -> LinkSpec {
        LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) }
    }

    pub(crate) fn testbed() -> Topology {
        leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 2, hosts_per_leaf: vec![16, 16], host_link: spec(10), fabric_link: spec(40) }).unwrap()
    }

    #[test]
    fn leaf_spine_counts_and_names() {
        let t = testbed();
        assert_eq!(t.num_hosts(), 32);
        assert_eq!(t.racks.len(), 2);
        assert_eq!(t.links.len(), 32 + 8);
        assert_eq!(t.host_rack[15], 0);
        assert_eq!(t.host_rack[16], 1);
        let l0 = t.node_by_name("L0").unwrap();
        assert_eq!(t.leaf_of_host(t.host(3)), l0);
        assert_eq!(t.match_ports("L0->S1").len(), 2, "two parallel uplinks");
        assert_eq!(t.match_ports("S1-L1#0").len(), 2, "both directions, either name order");
        assert_eq!(t.match_ports("L0->S*").len(), 4);
        assert!(t.is_uplink(t.match_ports("L0->S0#1")[0]));
        assert!(!t.is_uplink(t.match_ports("S0->L0#1")[0]));
    }

    /// Uplink j leads to the same plane (ToR) or the same core (aggregation
    /// switch of a plane) at every switch, whatever order the ports were
    /// built in: what a path tag's entry j means.
    #[test]
    fn uplinks_are_numbered_alike_at_every_switch_of_a_tier() {
        let t = clos3(&Clos3 {
            pods: 3,
            tors_per_pod: 2,
            aggs_per_pod: 2,
            cores: 6,
            hosts_per_tor: 1,
            host_link: spec(10),
            tor_agg_link: spec(40),
            agg_core_link: spec(40),
        })
        .unwrap();
        // shuffle every node's port list: the numbering must not depend on it
        let mut t2 = t.clone();
        t2.nodes.iter_mut().for_each(|n| n.ports.reverse());
        for topo in [&t, &t2] {
            let (ups, index) = topo.uplink_index();
            let to = |p: PortId| topo.node(topo.port(topo.port(p).peer).node);
            for (i, n) in topo.nodes.iter().enumerate() {
                match n.tier {
                    Tier::Leaf => assert_eq!(
                        ups[i].iter().map(|&p| (to(p).tier, to(p).pod, to(p).index)).collect::<Vec<_>>(),
                        [(Tier::Spine, n.pod, 0), (Tier::Spine, n.pod, 1)]
                    ),
                    // plane p of 2 reaches cores 3p, 3p + 1, 3p + 2
                    Tier::Spine => {
                        assert_eq!(ups[i].iter().map(|&p| to(p).index).collect::<Vec<_>>(), (0..3).map(|k| 3 * n.index + k).collect::<Vec<_>>(), "{}", n.name)
                    }
                    _ => assert!(ups[i].is_empty()),
                }
                for (j, &p) in ups[i].iter().enumerate() {
                    assert_eq!(index[p.idx()], j as u32);
                }
            }
            assert_eq!(index.iter().filter(|&&x| x != u32::MAX).count(), 3 * 2 * 2 + 3 * 2 * 3);
            // the leaf view keeps only the ToRs' uplinks
            let (leaf_ups, leaf_index) = topo.leaf_uplinks();
            assert_eq!(leaf_ups.len(), 6);
            assert_eq!(leaf_index.iter().filter(|&&x| x != u32::MAX).count(), 12);
        }
        // parallel links: by lane after the peer
        let ls = testbed();
        let (ups, _) = ls.leaf_uplinks();
        assert_eq!(ups[0].iter().map(|&p| ls.port(p).name.as_str()).collect::<Vec<_>>(), ["L0->S0#0", "L0->S0#1", "L0->S1#0", "L0->S1#1"]);
        // a leaf with no hosts is no rack: its uplinks get no rack position
        let t = leaf_spine(&LeafSpine { leaves: 3, spines: 2, links_per_pair: 1, hosts_per_leaf: vec![1, 0, 1], host_link: spec(10), fabric_link: spec(40) })
            .unwrap();
        let (ups, index) = t.leaf_uplinks();
        assert_eq!((ups.len(), t.racks.len()), (2, 2));
        let rackless = t.node_by_name("L1").unwrap();
        assert!(!t.racks.contains(&rackless));
        assert!(t.node(rackless).ports.iter().all(|p| index[p.idx()] == u32::MAX));
        assert_eq!(index.iter().filter(|&&x| x != u32::MAX).count(), 4);
    }

    #[test]
    fn uneven_hosts_per_leaf() {
        let t = leaf_spine(&LeafSpine { leaves: 3, spines: 1, links_per_pair: 1, hosts_per_leaf: vec![2, 5, 1], host_link: spec(1), fabric_link: spec(1) })
            .unwrap();
        assert_eq!(t.num_hosts(), 8);
        assert_eq!(t.rack_hosts(1).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6]);
    }

    #[test]
    fn fat_tree_has_textbook_sizes() {
        let t = fat_tree(4, spec(10), spec(10)).unwrap();
        assert_eq!(t.num_hosts(), 16);
        let switches = t.nodes.iter().filter(|n| n.kind == NodeKind::Switch).count();
        assert_eq!(switches, 20);
        assert_eq!(t.links.len(), 16 + 16 + 16);
        assert_eq!(t.racks.len(), 8);
        assert!(fat_tree(5, spec(1), spec(1)).unwrap_err().field == "topology.k");
    }

    #[test]
    fn explicit_topology_and_errors() {
        let n = |s: &str, host| ExplicitNode { name: s.into(), host };
        let l = |a: &str, b: &str| ExplicitLink { a: a.into(), b: b.into(), spec: spec(10), count: 1 };
        let t = Topology::explicit(&[n("a", true), n("b", true), n("sw", false)], &[l("a", "sw"), l("b", "sw")]).unwrap();
        assert_eq!(t.num_hosts(), 2);
        assert_eq!(t.racks.len(), 1);
        let e = Topology::explicit(&[n("a", true), n("sw", false)], &[l("a", "nope")]).unwrap_err();
        assert_eq!(e.field, "topology.links[0].b");
        let zero = ExplicitLink { count: 0, ..l("b", "sw") };
        let e = Topology::explicit(&[n("a", true), n("b", true), n("sw", false)], &[l("a", "sw"), zero]).unwrap_err();
        assert_eq!(e.field, "topology.links[1].count");
    }

    #[test]
    fn glob_matches() {
        assert!(glob("L0->S*#*", "L0->S1#0"));
        assert!(!glob("L0->S*#*", "L1->S1#0"));
        assert!(glob("a?c", "abc"));
        assert!(glob("*", ""));
    }
}
