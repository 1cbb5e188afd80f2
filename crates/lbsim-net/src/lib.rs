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
//! - [`packet`]: typed packets (addressing, 5-tuple, ECMP key, transport
//!   header, scheme header extension);
//! - [`lb`]: the load-balancing trait and the context its hooks act on.
//!
//! The event loop that moves packets between these pieces lives in
//! `lbsim-sim`; schemes live in `lbsim-lb`.

pub mod ids;
pub mod lb;
pub mod packet;
pub mod port;
pub mod routing;
pub mod topology;

pub use ids::{LinkId, NodeId, PktId, PortId};
pub use lb::{ecmp_pick, Action, Ctx, Forward, HostRx, LoadBalancer};
pub use packet::{LbHeader, Packet, Payload, Proto, ENCAP_DPORT};
pub use port::{Admit, PortQueue, Threshold};
pub use routing::Routing;
pub use topology::{LinkSpec, NodeKind, Tier, Topology, TopologyError};

#[cfg(test)]
mod tests {
    use super::*;
    use lbsim_engine::{Rng, SimTime};

    /// The ECMP acceptance test of the core issue: 4 next hops, two of them
    /// parallel links to the same switch, each get 25 % ± 2 % of 10,000
    /// random 5-tuples; two salts map tuples independently.
    #[test]
    fn ecmp_spreads_evenly_over_parallel_members_and_salts_are_independent() {
        let cands = [PortId(10), PortId(11), PortId(12), PortId(13)]; // 10, 11 parallel to one spine
        let mut rng = Rng::stream(42, "test");
        let mut counts = [0u32; 4];
        let mut same = 0;
        let (salt_a, salt_b) = (Rng::substream(1, "ecmp", 0).next_u64(), Rng::substream(1, "ecmp", 1).next_u64());
        let n = 10_000;
        for _ in 0..n {
            let src = NodeId(rng.below(64) as u32);
            let dst = NodeId(rng.below(64) as u32);
            let h = packet::tuple_hash(src, dst, rng.below(65536) as u16, rng.below(65536) as u16, Proto::Tcp);
            let a = ecmp_pick(salt_a, h, &cands);
            counts[(a.0 - 10) as usize] += 1;
            if ecmp_pick(salt_b, h, &cands) == a {
                same += 1;
            }
        }
        for c in counts {
            let f = c as f64 / n as f64;
            assert!((f - 0.25).abs() <= 0.02, "{counts:?}");
        }
        // independent choices agree 1/4 of the time
        let f = same as f64 / n as f64;
        assert!((f - 0.25).abs() < 0.02, "agreement {f}");
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
