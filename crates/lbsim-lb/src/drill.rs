//! DRILL (Ghorbani et al., SIGCOMM 2017, §3): per-packet, switch-local
//! load balancing. At every switch with more than one equal-cost next hop,
//! each packet samples `d` distinct random candidates, adds the `m` ports
//! remembered as least loaded by earlier decisions of the same candidate
//! group, and goes to the least occupied of them; the memory then keeps the
//! `m` least loaded ports of that comparison. DRILL(2, 1) is the paper's
//! default; with `d` at least the group size it is join-the-shortest-queue.
//!
//! Sources: the AG paper §VI-B (its baseline), the DRILL paper's abstract
//! and public talk notes, the Hermes authors' public ns-3 DRILL (d = 2, one
//! remembered port, load = queued bytes); see docs/schemes/ag.md §2.1.
//! Our choices: memory per (switch, candidate group) rather than per switch
//! (a switch with several groups would otherwise remember a port that is not
//! a candidate); ties go to the remembered port, then to the first sample;
//! one forwarding engine per switch (the paper's per-engine memories are
//! not modelled).
//!
//! Asymmetric fabrics (DRILL §3.3): per-packet choices among paths of
//! different capacity reorder and overload the weaker ones, so DRILL splits
//! a switch's next hops toward a destination into symmetric components —
//! ports whose paths onward have the same capacity — hashes each flow to
//! one component with probability in proportion to the component's
//! capacity, and applies DRILL(d, m) only inside it. A port's capacity
//! toward a destination is its rate, capped by its fair share (by rate,
//! among the ports feeding the next switch toward that destination) of
//! what the next switch forwards onward, recursively. Recomputed when a
//! link fails or recovers. On a symmetric fabric every group is one
//! component and DRILL is unchanged.

use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use crate::SchemeEnv;
use lbsim_net::{Ctx, Forward, LoadBalancer, NodeId, PktId, PortId};
use std::collections::HashMap;

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "d",
        unit: "ports",
        default: DefaultValue::Num(2.0),
        help: "random samples per packet (distinct candidates; DRILL(d, m), paper default d = 2)",
    },
    ParamDef {
        name: "m",
        unit: "ports",
        default: DefaultValue::Num(1.0),
        help: "memory units: least-loaded ports remembered per candidate group (paper default 1; 0 = no memory)",
    },
    ParamDef { name: "metric", unit: "", default: DefaultValue::Str("bytes"), help: "\"bytes\" or \"packets\": the egress queue occupancy compared" },
];

/// A symmetric component of a next-hop group: (cumulative capacity, ports).
type Component = (f64, Vec<PortId>);

pub struct Drill {
    d: usize,
    m: usize,
    by_bytes: bool,
    /// (switch, group key) → remembered ports, least loaded first.
    memory: HashMap<(u32, u64), Vec<PortId>>,
    /// Scratch: (load, port) of the ports compared for one packet.
    seen: Vec<(u64, PortId)>,
    /// Decisions taken at switches with more than one candidate.
    pub decisions: u64,
    /// Decisions that went to a remembered port.
    pub chose_memory: u64,
    /// (switch, destination host) → the symmetric components of its next
    /// hops: (cumulative capacity, ports); empty when there is only one.
    components: HashMap<(u32, u32), Vec<Component>>,
    /// (port, destination host) → the port's capacity toward it, b/s.
    capacity: HashMap<(u32, u32), f64>,
    /// Decisions in an asymmetric group (the flow's component first).
    pub asymmetric_decisions: u64,
    /// Scratch: the ports of the flow's component.
    part: Vec<PortId>,
}

impl Drill {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Drill, ParamError> {
        let widest = env.routing.widest_group();
        let d = p.count("d", 1 << 16)? as usize;
        if d > widest.max(1) {
            return Err(ParamError { key: "d".into(), msg: format!("{d} samples, but the widest equal-cost group of this fabric has {widest} ports") });
        }
        let m = p.num("m")?;
        if m.fract() != 0.0 || !(0.0..=widest.max(1) as f64).contains(&m) {
            return Err(ParamError { key: "m".into(), msg: format!("must be a whole number from 0 to {} (the widest group), got {m}", widest.max(1)) });
        }
        Ok(Drill {
            d,
            m: m as usize,
            by_bytes: p.string("metric", &["bytes", "packets"])? == "bytes",
            memory: HashMap::new(),
            seen: Vec::new(),
            decisions: 0,
            chose_memory: 0,
            components: HashMap::new(),
            capacity: HashMap::new(),
            asymmetric_decisions: 0,
            part: Vec::new(),
        })
    }

    /// The capacity of port `p` toward host `dst` (see the module docs).
    fn port_capacity(&mut self, ctx: &Ctx, p: PortId, dst: u32) -> f64 {
        if let Some(&c) = self.capacity.get(&(p.0, dst)) {
            return c;
        }
        let (topo, ports) = (ctx.topo, ctx.ports);
        let rate = if ports[p.idx()].up { ports[p.idx()].rate.0 as f64 } else { 0.0 };
        let next = topo.ports[topo.ports[p.idx()].peer.idx()].node;
        let c = if topo.is_host(next) || rate == 0.0 {
            rate
        } else {
            let onward: f64 = ctx.routing.next_hops(next, dst).iter().map(|&q| self.port_capacity(ctx, q, dst)).sum();
            // the ports feeding `next` toward `dst` share what it forwards onward
            let feeding: f64 = topo.nodes[next.idx()]
                .ports
                .iter()
                .map(|&q| topo.ports[q.idx()].peer)
                .filter(|&r| {
                    let from = topo.ports[r.idx()].node;
                    !topo.is_host(from) && ports[r.idx()].up && ctx.routing.next_hops(from, dst).contains(&r)
                })
                .map(|r| ports[r.idx()].rate.0 as f64)
                .sum();
            if feeding > 0.0 {
                rate.min(onward * rate / feeding)
            } else {
                rate
            }
        };
        self.capacity.insert((p.0, dst), c);
        c
    }

    /// Computes and caches the symmetric components of switch `sw`'s next
    /// hops `c` toward host `dst` (none when they all have the same capacity).
    fn decompose(&mut self, ctx: &Ctx, sw: NodeId, c: &[PortId], dst: u32) {
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        let mut comps: Vec<(f64, Vec<PortId>)> = vec![];
        for &p in c {
            let w = self.port_capacity(ctx, p, dst);
            if w <= 0.0 {
                continue;
            }
            match comps.iter_mut().find(|(cw, ps)| same(*cw / ps.len() as f64, w)) {
                Some((cw, ps)) => {
                    *cw += w;
                    ps.push(p);
                }
                None => comps.push((w, vec![p])),
            }
        }
        if comps.len() < 2 {
            comps.clear();
        } else {
            // cumulative capacities, for the weighted choice
            let mut acc = 0.0;
            for comp in comps.iter_mut() {
                acc += comp.0;
                comp.0 = acc;
            }
        }
        self.components.insert((sw.0, dst), comps);
    }

    /// DRILL(d, m) among the candidates `c` (one symmetric component).
    fn choose(&mut self, ctx: &mut Ctx, sw: NodeId, c: &[PortId]) -> Forward {
        let by_bytes = self.by_bytes;
        let load = |ctx: &Ctx, p: PortId| if by_bytes { ctx.queued_bytes(p) } else { ctx.queued_pkts(p) };
        self.seen.clear();
        let mem = self.memory.entry((sw.0, group_key(c))).or_default();
        // remembered ports first, so a tie keeps the remembered one
        for &p in mem.iter() {
            if c.contains(&p) {
                self.seen.push((load(ctx, p), p));
            }
        }
        let n_mem = self.seen.len();
        if self.d >= c.len() {
            for &p in c {
                if !self.seen.iter().any(|s| s.1 == p) {
                    self.seen.push((load(ctx, p), p));
                }
            }
        } else {
            // d distinct samples: a partial Fisher-Yates over indices
            let mut idx: [usize; 64] = [0; 64];
            let n = c.len().min(64);
            for (i, x) in idx.iter_mut().enumerate().take(n) {
                *x = i;
            }
            for k in 0..self.d.min(n) {
                let j = k + ctx.rng.below((n - k) as u64) as usize;
                idx.swap(k, j);
                let p = c[idx[k]];
                if !self.seen.iter().any(|s| s.1 == p) {
                    self.seen.push((load(ctx, p), p));
                }
            }
        }
        // the least loaded; the stable sort keeps memory, then sample order, on ties
        self.seen.sort_by_key(|s| s.0);
        let best = self.seen[0].1;
        if self.seen[..n_mem].iter().any(|s| s.1 == best) && n_mem > 0 {
            self.chose_memory += 1;
        }
        mem.clear();
        mem.extend(self.seen.iter().take(self.m).map(|s| s.1));
        Forward::Port(best)
    }
}

/// Identifies a candidate group (an order-sensitive mix of its ports).
fn group_key(c: &[PortId]) -> u64 {
    c.iter().fold(c.len() as u64, |h, p| lbsim_engine::mix64(h ^ p.0 as u64))
}

impl LoadBalancer for Drill {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in: PortId, pkt: PktId, c: &[PortId]) -> Forward {
        if c.len() == 1 {
            return Forward::Port(c[0]);
        }
        self.decisions += 1;
        let p = ctx.pkt(pkt);
        let (hash, dst) = (p.hash, if ctx.topo.is_host(p.dst) { Some(ctx.topo.host_index(p.dst)) } else { None });
        let mut part = std::mem::take(&mut self.part);
        part.clear();
        if let Some(d) = dst {
            // one lookup per packet; the components are computed on a miss
            let comps = match self.components.get(&(sw.0, d)) {
                Some(v) => v,
                None => {
                    self.decompose(ctx, sw, c, d);
                    &self.components[&(sw.0, d)]
                }
            };
            if !comps.is_empty() {
                // the flow's component, in proportion to capacity
                let total = comps.last().unwrap().0;
                let u = (lbsim_engine::mix64(hash ^ ctx.salts[sw.idx()] ^ 0xd811_c0a1) >> 11) as f64 / (1u64 << 53) as f64 * total;
                part.extend_from_slice(&comps.iter().find(|(acc, _)| u < *acc).unwrap_or(comps.last().unwrap()).1);
            }
        }
        if !part.is_empty() {
            self.asymmetric_decisions += 1;
            if part.len() == 1 {
                let only = part[0];
                self.part = part;
                return Forward::Port(only);
            }
        }
        let fwd = self.choose(ctx, sw, if part.is_empty() { c } else { &part });
        self.part = part;
        fwd
    }

    fn on_link_change(&mut self, _ctx: &mut Ctx, _link: lbsim_net::LinkId, _up: bool) {
        // capacities and components follow the live fabric
        self.components.clear();
        self.capacity.clear();
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("decisions", self.decisions as f64), ("chose_remembered", self.chose_memory as f64), ("asymmetric_decisions", self.asymmetric_decisions as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use crate::Value;
    use lbsim_engine::{Bytes, SimTime};
    use lbsim_net::topology::{leaf_spine, LeafSpine, LinkSpec};
    use std::collections::BTreeMap;

    fn drill(env: &Env, d: f64, m: f64) -> Result<Drill, ParamError> {
        let mut g = BTreeMap::new();
        g.insert("d".to_string(), Value::Num(d));
        g.insert("m".to_string(), Value::Num(m));
        let e = env.scheme_env();
        Drill::new(&Params::new(&g, PARAMS, "drill")?, &e)
    }

    /// 1 leaf pair × 4 spines: leaf 0's uplinks are a group of 4.
    fn four_spines() -> Env {
        let s = |g| LinkSpec { rate: lbsim_engine::BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        Env::from_topology(
            leaf_spine(&LeafSpine { leaves: 2, spines: 4, links_per_pair: 1, hosts_per_leaf: vec![4, 4], host_link: s(10), fabric_link: s(10) }).unwrap(),
        )
    }

    /// Fills port `p` with `n` 1,000-byte packets at time 0.
    fn preload(env: &mut Env, p: PortId, n: u32) {
        for _ in 0..n {
            let id = env.packet(0, 4, 1000);
            let _ = env.ports[p.idx()].offer(SimTime::ZERO, id, Bytes(1000), SimTime::ZERO);
        }
    }

    fn uplinks(env: &Env) -> Vec<PortId> {
        let leaf = env.topo.leaf_of_host(env.topo.host(0));
        env.routing.next_hops(leaf, 4).to_vec()
    }

    #[test]
    fn goes_to_the_least_loaded_of_samples_and_memory() {
        let mut env = four_spines();
        let up = uplinks(&env);
        assert_eq!(up.len(), 4);
        for (i, &p) in up.iter().enumerate() {
            preload(&mut env, p, 10 * (i as u32 + 1)); // loads 10, 20, 30, 40 packets
        }
        let leaf = env.topo.leaf_of_host(env.topo.host(0));
        let mut s = drill(&env, 2.0, 1.0).unwrap();
        let mut chosen = vec![];
        for _ in 0..200 {
            let pkt = env.packet(0, 4, 1000);
            let Forward::Port(p) = s.on_switch(&mut env.ctx(SimTime::ZERO), leaf, PortId(0), pkt, &up) else { panic!() };
            chosen.push(p);
        }
        // the first decision compares two samples; the least loaded port
        // (up[0]) enters memory as soon as a sample hits it and never leaves
        let first = chosen.iter().position(|&p| p == up[0]).unwrap();
        assert!(first < 10, "up[0] first chosen at decision {first}");
        assert!(chosen[first..].iter().all(|&p| p == up[0]));
        assert!(s.chose_memory >= 190, "{}", s.chose_memory);
        // no memory: the choice is the better of two random samples, so the
        // worst port is never chosen and the best about half the time
        let mut s = drill(&env, 2.0, 0.0).unwrap();
        let mut n_best = 0;
        for _ in 0..2000 {
            let pkt = env.packet(0, 4, 1000);
            let Forward::Port(p) = s.on_switch(&mut env.ctx(SimTime::ZERO), leaf, PortId(0), pkt, &up) else { panic!() };
            assert_ne!(p, up[3]);
            n_best += (p == up[0]) as u32;
        }
        // P(best sampled among 2 of 4) = 1/2
        assert!((900..1100).contains(&n_best), "{n_best}");
    }

    #[test]
    fn d_equal_to_the_group_is_join_the_shortest_queue() {
        let mut env = four_spines();
        let up = uplinks(&env);
        for (i, &p) in up.iter().enumerate() {
            preload(&mut env, p, [30, 5, 20, 12][i]);
        }
        let leaf = env.topo.leaf_of_host(env.topo.host(0));
        let mut s = drill(&env, 4.0, 0.0).unwrap();
        for _ in 0..50 {
            let pkt = env.packet(0, 4, 1000);
            assert_eq!(s.on_switch(&mut env.ctx(SimTime::ZERO), leaf, PortId(0), pkt, &up), Forward::Port(up[1]));
        }
    }

    #[test]
    fn memory_is_kept_per_candidate_group() {
        let mut env = four_spines();
        let up = uplinks(&env);
        preload(&mut env, up[0], 50);
        preload(&mut env, up[1], 40);
        let leaf = env.topo.leaf_of_host(env.topo.host(0));
        let mut s = drill(&env, 2.0, 1.0).unwrap();
        // group A = {up0, up1}: remembers up1; group B = {up2, up3}: its own
        let a = [up[0], up[1]];
        let b = [up[2], up[3]];
        let pkt = env.packet(0, 4, 1000);
        assert_eq!(s.on_switch(&mut env.ctx(SimTime::ZERO), leaf, PortId(0), pkt, &a), Forward::Port(up[1]));
        let pkt = env.packet(0, 4, 1000);
        let Forward::Port(pb) = s.on_switch(&mut env.ctx(SimTime::ZERO), leaf, PortId(0), pkt, &b) else { panic!() };
        assert!(b.contains(&pb));
        assert_eq!(s.memory.len(), 2);
        assert_eq!(s.memory[&(leaf.0, group_key(&a))], vec![up[1]]);
        assert_eq!(s.memory[&(leaf.0, group_key(&b))], vec![pb]);
    }

    #[test]
    fn d_beyond_the_widest_group_or_zero_is_refused() {
        let env = four_spines();
        let e = drill(&env, 5.0, 1.0).err().unwrap();
        assert_eq!(e.key, "d");
        assert!(e.msg.contains("widest equal-cost group of this fabric has 4"), "{}", e.msg);
        assert_eq!(drill(&env, 0.0, 1.0).err().unwrap().key, "d");
        assert_eq!(drill(&env, 2.0, 1.5).err().unwrap().key, "m");
        assert_eq!(drill(&env, 2.0, 5.0).err().unwrap().key, "m");
        assert!(drill(&env, 4.0, 4.0).is_ok());
    }
}
