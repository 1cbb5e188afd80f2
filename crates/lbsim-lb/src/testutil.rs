//! Fixtures for scheme unit tests: a topology with routes, ports, a packet
//! slab and an RNG, from which hooks get a `Ctx`.

use lbsim_engine::{BitsPerSec, Rng, SimTime, Slab};
use lbsim_net::topology::{leaf_spine, LeafSpine, LinkSpec};
use lbsim_net::{Action, Ctx, Packet, Payload, PktId, PortQueue, Proto, Routing, Threshold, Topology};

pub struct Env {
    pub topo: Topology,
    pub routing: Routing,
    pub ports: Vec<PortQueue>,
    pub salts: Vec<u64>,
    pub pkts: Slab<Packet>,
    pub rng: Rng,
    pub actions: Vec<Action>,
    next_sport: u16,
}

impl Env {
    /// The Clove/CONGA testbed: 2 leaves, 2 spines, 2 x 40G per pair, 16 hosts per leaf at 10G.
    pub fn testbed() -> Env {
        let s = |g| LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        Env::from_topology(
            leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 2, hosts_per_leaf: vec![16, 16], host_link: s(10), fabric_link: s(40) }).unwrap(),
        )
    }

    pub fn from_topology(topo: Topology) -> Env {
        let routing = Routing::compute(&topo, &vec![true; topo.links.len()]);
        let ports = topo.ports.iter().map(|p| PortQueue::new(p.rate, p.delay, Threshold::Packets(250), Some(Threshold::Packets(20)))).collect();
        let salts = (0..topo.nodes.len()).map(|i| Rng::substream(1, "ecmp", i as u64).next_u64()).collect();
        Env { topo, routing, ports, salts, pkts: Slab::new(), rng: Rng::stream(1, "scheme"), actions: vec![], next_sport: 1000 }
    }

    /// A UDP-ish data packet between host indices with a fresh source port.
    pub fn packet(&mut self, src: u32, dst: u32, size: u32) -> PktId {
        self.next_sport += 1;
        let p = Packet::new(self.topo.host(src), self.topo.host(dst), self.next_sport, 80, Proto::Tcp, size, Payload::Udp { source: 0 }, SimTime::ZERO);
        PktId(self.pkts.insert(p))
    }

    /// A packet of the same 5-tuple as an earlier one.
    pub fn same_flow(&mut self, like: PktId) -> PktId {
        let p = *self.pkts.get(like.0);
        PktId(self.pkts.insert(p))
    }

    /// What a scheme is built with: MSS 1448 B, an RTT of 20 µs.
    pub fn scheme_env(&self) -> crate::SchemeEnv<'_> {
        crate::SchemeEnv {
            topo: &self.topo,
            routing: &self.routing,
            switch_buffer_bytes: 250 * 1500,
            mss: 1448,
            header_bytes: 52,
            base_rtt: SimTime::from_us(20),
        }
    }

    pub fn ctx(&mut self, now: SimTime) -> Ctx<'_> {
        Ctx {
            now,
            topo: &self.topo,
            routing: &self.routing,
            ports: &self.ports,
            salts: &self.salts,
            pkts: &mut self.pkts,
            rng: &mut self.rng,
            actions: &mut self.actions,
            lossless: None,
        }
    }
}
