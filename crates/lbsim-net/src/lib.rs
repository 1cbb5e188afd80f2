//! # lbsim-net
//!
//! The network model: what a datacenter fabric is, independent of how it
//! is driven.
//!
//! - [`topology`]: nodes, egress ports, full-duplex links; builders for
//!   leaf-spine, 3-tier Clos, k-ary fat-tree and explicit lists;
//! - [`routing`]: shortest-path equal-cost next-hop groups, recomputed
//!   when links fail;
//! - [`port`]: drop-tail egress FIFOs with instantaneous-queue ECN marking;
//! - [`pfc`]: lossless egress classes, the shared-buffer switch MMU and
//!   PFC pause/resume (IEEE 802.1Qbb), ECN by RED at dequeue;
//! - [`packet`]: typed packets (addressing, 5-tuple, ECMP key, transport
//!   header, scheme header extension);
//! - [`lb`]: the load-balancing trait and the context its hooks act on.
//!
//! The event loop that moves packets between these pieces lives in
//! `lbsim-sim`; schemes live in `lbsim-lb`.

pub mod ids;
pub mod lb;
pub mod packet;
pub mod pfc;
pub mod port;
pub mod routing;
pub mod topology;

pub use ids::{LinkId, NodeId, PktId, PortId};
pub use lb::{ecmp_pick, Action, Ctx, Forward, HostRx, LoadBalancer, ReportTable, ReportValue};
pub use packet::{cd_get, cd_set, tuple_hash, LbHeader, Packet, Payload, Proto, RdmaKind, ENCAP_DPORT, ROCE_DPORT};
pub use pfc::{Dequeued, LosslessPort, Mmu, PfcConfig, Waiting};
pub use port::{Admit, PortEnds, PortQueue, Threshold};
pub use routing::Routing;
pub use topology::{LinkSpec, NodeKind, PortPlace, Tier, Topology, TopologyError};

#[cfg(test)]
mod tests {
    use super::*;
    use lbsim_engine::{Rng, SimTime};

    /// The ECMP acceptance test of the core issue: leaf L0 of a 2-spine
    /// fabric with 2 parallel links per leaf-spine pair has 4 next hops
    /// toward L1 (two pairs of parallel links to the same spine); each gets
    /// 25 % ± 2 % of 10,000 random 5-tuples, and two switches with
    /// different salts choose independently (each of the 16 joint choices
    /// ~1/16).
    #[test]
    fn ecmp_spreads_evenly_over_parallel_members_and_salts_are_independent() {
        use crate::topology::{leaf_spine, LeafSpine};
        use lbsim_engine::BitsPerSec;
        let spec = |g| LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        let topo =
            leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 2, hosts_per_leaf: vec![1, 1], host_link: spec(10), fabric_link: spec(40) }).unwrap();
        let routing = Routing::compute(&topo, &vec![true; topo.links.len()]);
        let l0 = topo.node_by_name("L0").unwrap();
        let cands = routing.next_hops(l0, 1).to_vec();
        assert_eq!(cands.len(), 4);
        // two distinct spines, each reached over two distinct parallel links
        let far = |p: PortId| topo.port(topo.port(p).peer).node;
        let mut spines: Vec<NodeId> = cands.iter().map(|&p| far(p)).collect();
        spines.sort();
        spines.dedup();
        assert_eq!(spines.len(), 2);
        let mut rng = Rng::stream(42, "test");
        let mut counts = [0u32; 4];
        let mut joint = [[0u32; 4]; 4];
        let (salt_a, salt_b) = (Rng::substream(1, "ecmp", 0).next_u64(), Rng::substream(1, "ecmp", 1).next_u64());
        let idx = |p: PortId| cands.iter().position(|&c| c == p).unwrap();
        let n = 10_000;
        for _ in 0..n {
            let src = NodeId(rng.below(64) as u32);
            let dst = NodeId(rng.below(64) as u32);
            let h = packet::tuple_hash(src, dst, rng.below(65536) as u16, rng.below(65536) as u16, Proto::Tcp);
            let (a, b) = (idx(ecmp_pick(salt_a, h, &cands)), idx(ecmp_pick(salt_b, h, &cands)));
            counts[a] += 1;
            joint[a][b] += 1;
        }
        for c in counts {
            let f = c as f64 / n as f64;
            assert!((f - 0.25).abs() <= 0.02, "{counts:?}");
        }
        // 625 expected per cell; 5 standard deviations is ~±120
        for row in joint {
            for c in row {
                assert!((c as f64 - 625.0).abs() < 125.0, "{joint:?}");
            }
        }
    }

    #[test]
    fn encapsulation_changes_the_ecmp_key() {
        let mut p = Packet::new(NodeId(1), NodeId(2), 1000, 80, Proto::Tcp, 1500, Payload::Udp { source: 0 }, SimTime::ZERO);
        let inner = p.hash;
        p.set_outer_sport(5000);
        assert_ne!(p.hash, inner);
        assert_eq!(p.inner_hash(), inner);
        let h5000 = p.hash;
        p.set_outer_sport(5001);
        assert_ne!(p.hash, h5000);
    }
}
