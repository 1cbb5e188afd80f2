//! Clairvoyant (Expeditus §6.1): "an 'ideal' congestion-aware scheme that
//! uses complete path-wise information of all possible paths. Whenever a
//! new flow comes, the source ToR chooses the best path."
//!
//! An oracle with the same meters as Expeditus (egress DREs, T_dre, τ and Q
//! from the same parameters) so that only the information differs: at the
//! first packet of each direction the source ToR reads the egress metric of
//! every hop of every equal-cost path (ToR→agg, agg→core, core→agg,
//! agg→ToR; two hops inside a pod or a leaf-spine) and takes the path whose
//! largest metric is smallest, ties at random. Both decisions (the ToR's
//! uplink and the source aggregation switch's core uplink) are installed in
//! the path-selection tables at once, with no packets and no delay, so the
//! first packet already takes the chosen path. Entries time out as in
//! Expeditus. Hops after the aggregation switch follow routing as a packet
//! would (ECMP where a later hop has parallel links).

use crate::expeditus::{argmin_random, Fabric, Meters, CLAIRVOYANT_PARAMS};
use crate::params::{ParamDef, ParamError, Params};
use crate::pst::{self, Lookup, Pst};
use crate::SchemeEnv;
use lbsim_net::{ecmp_pick, Ctx, Forward, LoadBalancer, NodeId, PktId, PortId, Tier};

pub const PARAMS: &[ParamDef] = CLAIRVOYANT_PARAMS;

/// A candidate path: (cost, ToR uplink, the aggregation switch's core uplink).
type Path = (u8, PortId, Option<(NodeId, PortId)>);

pub struct Clairvoyant {
    fab: Fabric,
    m: Meters,
    pst: pst::Tables,
    pub decisions: u64,
    pub pst_hits: u64,
}

impl Clairvoyant {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Clairvoyant, ParamError> {
        let fab = Fabric::new(env.topo, "clairvoyant")?;
        let m = Meters::new(p, env.topo, env.topo.fabric_ports())?;
        Ok(Clairvoyant { fab, m, pst: pst::Tables::new(p, env.topo.nodes.len())?, decisions: 0, pst_hits: 0 })
    }

    fn pst(&mut self, sw: NodeId) -> &mut Pst {
        self.pst.at(sw)
    }

    /// Live entries replaced by a colliding flow's, over every switch.
    pub fn pst_evictions(&self) -> u64 {
        self.pst.evictions()
    }

    /// Test hook: `bytes` queued on `port` at `t`.
    #[cfg(test)]
    pub(crate) fn on_enqueue_bytes(&mut self, t: lbsim_engine::SimTime, port: PortId, bytes: u32) {
        self.m.on_egress(t, port, bytes);
    }

    /// The metric of a port's egress direction now.
    fn metric(&mut self, ctx: &Ctx, port: PortId) -> u8 {
        let u = self.m.egress(ctx, port);
        self.m.metric(u, 1.0)
    }

    /// The largest metric from `node` (entered on `in_port`) to the
    /// destination's ToR, following routing and ECMP as the packet will.
    fn rest(&mut self, ctx: &Ctx, mut node: NodeId, mut in_port: PortId, hash: u64, dst: u32, dst_tor: NodeId) -> u8 {
        let mut worst = 0;
        for _ in 0..16 {
            if node == dst_tor {
                return worst;
            }
            let c = ctx.routing.next_hops_from(node, in_port, dst);
            if c.is_empty() {
                return self.m.max;
            }
            let port = ecmp_pick(ctx.salts[node.idx()], hash, c);
            worst = worst.max(self.metric(ctx, port));
            in_port = ctx.topo.port(port).peer;
            node = ctx.topo.port(in_port).node;
        }
        self.m.max
    }

    /// Chooses the path of a new flow at its source ToR and installs it.
    fn decide(&mut self, ctx: &mut Ctx, sw: NodeId, pkt: PktId, cands: &[PortId]) -> PortId {
        let p = *ctx.pkt(pkt);
        let dst = ctx.topo.host_index(p.dst);
        let dst_tor = ctx.topo.leaf_of_host(p.dst);
        let inter = self.fab.inter_pod(ctx.topo, p.src, p.dst);
        // (cost, ToR uplink, the aggregation switch's core uplink)
        let mut paths: Vec<Path> = vec![];
        for &u in cands {
            let first = self.metric(ctx, u);
            let agg_in = ctx.topo.port(u).peer;
            let agg = ctx.topo.port(agg_in).node;
            if inter {
                for &c in ctx.routing.next_hops_from(agg, agg_in, dst) {
                    let second = self.metric(ctx, c);
                    let core_in = ctx.topo.port(c).peer;
                    let rest = self.rest(ctx, ctx.topo.port(core_in).node, core_in, p.hash, dst, dst_tor);
                    paths.push((first.max(second).max(rest), u, Some((agg, c))));
                }
            } else {
                let rest = self.rest(ctx, agg, agg_in, p.hash, dst, dst_tor);
                paths.push((first.max(rest), u, None));
            }
        }
        let costs: Vec<u8> = paths.iter().map(|x| x.0).collect();
        let (_, up, core) = paths[argmin_random(&costs, ctx.rng)];
        let now = ctx.now;
        self.pst(sw).install(p.hash, up, now);
        if let Some((agg, c)) = core {
            self.pst(agg).install(p.hash, c, now);
        }
        self.decisions += 1;
        up
    }
}

impl LoadBalancer for Clairvoyant {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in_port: PortId, pkt: PktId, cands: &[PortId]) -> Forward {
        let northbound = self.fab.is_uplink(cands[0]);
        let tier = ctx.topo.node(sw).tier;
        if !northbound || !ctx.topo.is_host(ctx.pkt(pkt).src) {
            return Forward::Port(ctx.ecmp(sw, pkt, cands));
        }
        let (hash, now) = (ctx.pkt(pkt).hash, ctx.now);
        match tier {
            Tier::Leaf => match self.pst(sw).lookup(hash, now, cands) {
                Lookup::Valid(port) => {
                    self.pst_hits += 1;
                    Forward::Port(port)
                }
                _ => Forward::Port(self.decide(ctx, sw, pkt, cands)),
            },
            _ => {
                let port = self.pst(sw).valid_port(hash, now, cands);
                Forward::Port(port.unwrap_or_else(|| ctx.ecmp(sw, pkt, cands)))
            }
        }
    }

    fn wants_enqueue(&self) -> bool {
        true
    }

    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        let size = ctx.pkt(pkt).size;
        self.m.on_egress(ctx.now, port, size);
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("decisions", self.decisions as f64), ("pst_hits", self.pst_hits as f64), ("pst_evictions", self.pst_evictions() as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expeditus::Expeditus;
    use crate::testutil::Env;
    use lbsim_engine::{BitsPerSec, SimTime};
    use lbsim_net::topology::{clos3, Clos3, LinkSpec};
    use lbsim_net::Action;
    use std::collections::BTreeMap;

    fn fig7() -> Env {
        let s = LinkSpec { rate: BitsPerSec::gbps(10), delay: SimTime::from_us(2) };
        Env::from_topology(
            clos3(&Clos3 { pods: 3, tors_per_pod: 3, aggs_per_pod: 2, cores: 4, hosts_per_tor: 2, host_link: s, tor_agg_link: s, agg_core_link: s }).unwrap(),
        )
    }

    fn port(env: &Env, name: &str) -> PortId {
        env.topo.match_ports(name)[0]
    }

    #[test]
    fn clairvoyant_avoids_an_agg_with_saturated_core_links_where_expeditus_does_not() {
        // §6.4's pitfall: the idlest ToR uplink (to A0_1) leads to an
        // aggregation switch whose core links are saturated; stage 1 never
        // sees them, Clairvoyant does.
        let mut env = fig7();
        let none = BTreeMap::new();
        let mut c = Clairvoyant::new(&Params::new(&none, PARAMS, "clairvoyant").unwrap(), &env.scheme_env()).unwrap();
        let mut x = Expeditus::new(&Params::new(&none, crate::expeditus::PARAMS, "expeditus").unwrap(), &env.scheme_env()).unwrap();
        let t = SimTime::from_us(1);
        let c_tau = (10e9 / 8.0 * 200e-6) as u32;
        for (name, frac) in [("T0_0->A0_0", 0.4), ("A0_1->C2", 0.95), ("A0_1->C3", 0.95)] {
            let p = port(&env, name);
            let b = (frac * c_tau as f64) as u32;
            c.on_enqueue_bytes(t, p, b);
            x.on_enqueue_bytes(t, p, b);
        }
        let t00 = env.topo.node_by_name("T0_0").unwrap();
        let inp = env.topo.port(env.topo.nic(env.topo.host(0))).peer;
        let cands = env.routing.next_hops(t00, 6).to_vec();
        let mut by_c = [0; 2];
        let mut by_x = [0; 2];
        for i in 0..50 {
            let p = env.packet(0, 6, 64);
            let f = c.on_switch(&mut env.ctx(t), t00, inp, p, &cands);
            by_c[(f == Forward::Port(port(&env, "T0_0->A0_1"))) as usize] += 1;
            // Expeditus: stage 1 with an idle destination picks the source's idlest uplink
            let q = env.packet(0, 6, 64);
            x.on_switch(&mut env.ctx(t), t00, inp, q, &cands);
            let t10 = env.topo.node_by_name("T1_0").unwrap();
            let c2 = env.routing.next_hops(t10, 6).to_vec();
            let in10 = port(&env, "T1_0->A1_0");
            x.on_switch(&mut env.ctx(t), t10, in10, q, &c2);
            let resp = env.actions.iter().find_map(|a| if let Action::SendFromSwitch { port, .. } = a { *port } else { None }).unwrap();
            by_x[(resp == port(&env, "T1_0->A1_1")) as usize] += 1;
            env.actions.clear();
            let _ = i;
        }
        assert_eq!(by_c, [50, 0], "Clairvoyant: via A0_0 (max 3) rather than A0_1 (max 7)");
        assert_eq!(by_x, [0, 50], "Expeditus: plane 1, the source's idle uplink");
        // the first packet is pinned end to end: the agg has the core entry
        let a00 = env.topo.node_by_name("A0_0").unwrap();
        assert!(c.pst.get(a00).unwrap().len() >= 50);
    }
}
