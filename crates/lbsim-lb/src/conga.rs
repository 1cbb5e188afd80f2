//! CONGA (Alizadeh et al., SIGCOMM 2014, §3): congestion-aware flowlet load
//! balancing at the leaves with leaf-to-leaf feedback.
//!
//! - §3.2 DRE on every fabric port (leaf uplinks and spine downlinks; both
//!   ends are switches): X += bytes per packet sent, X ×= (1−α) every
//!   T_dre; metric = X/(C·τ) quantised to Q bits.
//! - §3.1/§3.3 overlay fields: the source leaf sets LBTag (its uplink) and
//!   CE = 0; every fabric hop raises CE to its port's metric; the
//!   destination leaf stores CE in Congestion-From-Leaf[src leaf][LBTag] and
//!   piggybacks one metric per packet it sends toward that leaf (FB_LBTag,
//!   FB_Metric), round-robin, favouring metrics changed since last sent;
//!   the source leaf stores it in Congestion-To-Leaf[dst leaf][uplink].
//!   Feedback rides only on packets that exist: no packet, no feedback.
//! - §3.3 metric aging: a remote metric not updated for `metric_age_ms`
//!   decays toward 0 (our choice of "gradually": halved for every further
//!   `metric_age_ms` without an update).
//! - §3.4 flowlet table: hashed, valid + age bit, gaps of T_fl–2·T_fl.
//! - §3.5 decision for a new flowlet: the uplink minimising
//!   max(local DRE metric, remote metric); ties at random among the best,
//!   preferring the port the expired entry held. Unknown remote metrics
//!   count as 0.
//!
//! Spines run plain ECMP and only update CE. CONGA-Flow (§5) is the same
//! with T_fl = 13 ms.
//!
//! Modelling note: the DRE is updated when a packet is admitted to the
//! port's queue (lbsim computes its transmit time then), not when its last
//! bit leaves — a shift of at most one queueing delay against τ = 160 µs.

use crate::dre::{Dre, DreParams};
use crate::flowlet::{FlowletTable, Lookup};
use crate::params::{num, ParamDef, ParamError, Params};
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, LbHeader, LoadBalancer, NodeId, PktId, PortId, ReportTable, ReportValue, Tier, Topology};

macro_rules! conga_params {
    ($fl:expr) => {
        &[
            num("flowlet_us", "us", $fl, "flowlet inactivity timeout T_fl (§3.4); gaps of T_fl..2 T_fl end a flowlet"),
            num("tau_us", "us", 160.0, "DRE time constant tau = T_dre / alpha (§3.2, §3.6)"),
            num("dre_period_us", "us", 5.0, "DRE decrement period T_dre (paper: unstated; our choice keeps X within alpha = 3 % of R*tau)"),
            num("q_bits", "bits", 3.0, "bits of the quantised congestion metric Q (§3.1, §3.6)"),
            num("metric_age_ms", "ms", 10.0, "a remote metric not updated for this long starts decaying (§3.3)"),
            num("flowlet_table_size", "entries", 65536.0, "flowlet table entries per leaf (§3.4: 64K)"),
        ]
    };
}

pub const PARAMS: &[ParamDef] = conga_params!(500.0);
pub const FLOW_PARAMS: &[ParamDef] = conga_params!(13000.0);

#[derive(Clone, Copy, Debug, Default)]
struct Remote {
    value: u8,
    at: SimTime,
    valid: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct FromLeaf {
    value: u8,
    valid: bool,
    changed: bool,
}

/// Bytes per (leaf, leaf, uplink) (for the memory check before a run).
pub const PATH_STATE_BYTES: usize = std::mem::size_of::<Remote>() + std::mem::size_of::<FromLeaf>();
/// Bytes per leaf pair (the round-robin tie-break position).
pub const PAIR_STATE_BYTES: usize = std::mem::size_of::<u8>();

pub struct Conga {
    dre_p: DreParams,
    dre: Vec<Dre>,
    fabric_port: Vec<bool>,
    t_fl: SimTime,
    table_size: usize,
    age: SimTime,
    /// Per node: the flowlet table (leaves that source traffic; lazy).
    flowlets: Vec<Option<FlowletTable>>,
    /// Per leaf (rack index): its uplinks; LBTag = position here.
    uplinks: Vec<Vec<PortId>>,
    /// Per port: its LBTag if it is a leaf uplink.
    tag_of: Vec<u8>,
    n_leaves: usize,
    max_up: usize,
    /// Congestion-To-Leaf[src leaf][dst leaf][uplink tag]
    to_leaf: Vec<Remote>,
    /// Congestion-From-Leaf[dst leaf][src leaf][tag]
    from_leaf: Vec<FromLeaf>,
    /// Round-robin pointer per (dst leaf, src leaf)
    rr: Vec<u8>,
    pub flowlets_started: u64,
    pub feedback_sent: u64,
    /// Per port (a leaf uplink): remote metrics received for its tag, and their sum.
    remote_reports: Vec<(u64, u64)>,
}

impl Conga {
    pub fn new(p: &Params, topo: &Topology) -> Result<Conga, ParamError> {
        let dre_p = DreParams::from_params(p, 8, "")?;
        let size = p.count("flowlet_table_size", 1 << 24)? as usize;
        let n_leaves = topo.racks.len();
        let (uplinks, index) = topo.leaf_uplinks();
        let tag_of: Vec<u8> = index.iter().map(|&i| if i == u32::MAX { u8::MAX } else { i as u8 }).collect();
        let max_up = uplinks.iter().map(|u| u.len()).max().unwrap_or(0).max(1);
        let fabric_port = topo.fabric_ports();
        Ok(Conga {
            dre_p,
            dre: vec![Dre::default(); topo.ports.len()],
            fabric_port,
            t_fl: p.duration("flowlet_us", false)?,
            table_size: size,
            age: p.duration("metric_age_ms", false)?,
            flowlets: vec![None; topo.nodes.len()],
            uplinks,
            tag_of,
            n_leaves,
            max_up,
            to_leaf: vec![Remote::default(); n_leaves * n_leaves * max_up],
            from_leaf: vec![FromLeaf::default(); n_leaves * n_leaves * max_up],
            rr: vec![0; n_leaves * n_leaves],
            flowlets_started: 0,
            feedback_sent: 0,
            remote_reports: vec![(0, 0); topo.ports.len()],
        })
    }

    /// Per leaf uplink (its LBTag's path): remote metrics received and
    /// their mean (0 ..= 2^Q - 1), for the summary.
    pub fn remote_by_uplink(&self) -> Vec<(PortId, u64, f64)> {
        self.uplinks
            .iter()
            .flatten()
            .map(|&p| {
                let (n, sum) = self.remote_reports[p.idx()];
                (p, n, if n > 0 { sum as f64 / n as f64 } else { 0.0 })
            })
            .collect()
    }

    /// Leaf `rack`'s uplinks; a port's LBTag is its position here.
    pub fn uplinks(&self, rack: usize) -> &[PortId] {
        &self.uplinks[rack]
    }

    fn idx(&self, a: usize, b: usize, tag: usize) -> usize {
        (a * self.n_leaves + b) * self.max_up + tag
    }

    /// The remote metric for `tag` from `src` to `dst` at `now`, aged.
    fn remote(&self, src: usize, dst: usize, tag: usize, now: SimTime) -> u8 {
        let r = self.to_leaf[self.idx(src, dst, tag)];
        if !r.valid {
            return 0;
        }
        crate::dre::aged(r.value as u32, now - r.at, self.age) as u8
    }

    /// Local metric of a port at `now`.
    fn local(&mut self, ctx: &Ctx, port: PortId) -> u8 {
        let rate = ctx.ports[port.idx()].rate.0;
        self.dre[port.idx()].metric(&self.dre_p, ctx.now, rate)
    }

    /// §3.5: the uplink minimising max(local, remote); ties at random,
    /// preferring `cached`.
    fn decide(&mut self, ctx: &mut Ctx, src_leaf: usize, dst_leaf: usize, cands: &[PortId], cached: Option<PortId>) -> PortId {
        let mut best = u8::MAX;
        let mut ties: [PortId; 64] = [PortId(0); 64];
        let mut n = 0;
        for &c in cands {
            let tag = self.tag_of[c.idx()] as usize;
            let cost = self.local(ctx, c).max(self.remote(src_leaf, dst_leaf, tag, ctx.now));
            if cost < best {
                best = cost;
                n = 0;
            }
            if cost == best && n < ties.len() {
                ties[n] = c;
                n += 1;
            }
        }
        if let Some(c) = cached {
            if ties[..n].contains(&c) {
                return c;
            }
        }
        ties[ctx.rng.below(n as u64) as usize]
    }

    /// Picks the feedback metric to piggyback from `me` toward `other`.
    fn pick_feedback(&mut self, me: usize, other: usize) -> Option<(u8, u8)> {
        let rr_i = me * self.n_leaves + other;
        let start = self.rr[rr_i] as usize;
        let n = self.max_up;
        let mut pick = None;
        for k in 0..n {
            let tag = (start + k) % n;
            let e = self.from_leaf[self.idx(me, other, tag)];
            if e.valid && e.changed {
                pick = Some(tag);
                break;
            }
        }
        if pick.is_none() {
            pick = (0..n).map(|k| (start + k) % n).find(|&tag| self.from_leaf[self.idx(me, other, tag)].valid);
        }
        let tag = pick?;
        let i = self.idx(me, other, tag);
        self.from_leaf[i].changed = false;
        self.rr[rr_i] = ((tag + 1) % n) as u8;
        Some((tag as u8, self.from_leaf[i].value))
    }
}

impl LoadBalancer for Conga {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId, cands: &[PortId]) -> Forward {
        let node = ctx.topo.node(sw);
        if node.tier != Tier::Leaf {
            return Forward::Port(ctx.ecmp(sw, pkt, cands)); // spines: plain ECMP
        }
        let me = node.index as usize;
        let p = *ctx.pkt(pkt);
        if !ctx.topo.is_host(p.src) || !ctx.topo.is_host(p.dst) {
            return Forward::Port(ctx.ecmp(sw, pkt, cands));
        }
        let src_leaf = ctx.topo.host_rack[ctx.topo.host_index(p.src) as usize] as usize;
        let dst_leaf = ctx.topo.host_rack[ctx.topo.host_index(p.dst) as usize] as usize;
        let from_host = ctx.topo.is_host(ctx.topo.ports[ctx.topo.ports[in_port.idx()].peer.idx()].node);
        if from_host && dst_leaf != me && src_leaf == me {
            // source leaf: flowlet detection and the §3.5 decision
            let table = self.flowlets[sw.idx()].get_or_insert_with(|| FlowletTable::new(self.table_size, self.t_fl));
            let port = match table.lookup(p.hash, ctx.now) {
                Lookup::Active(port) if cands.contains(&port) => port,
                Lookup::Active(port) | Lookup::New(Some(port)) => {
                    self.flowlets_started += 1;
                    let c = self.decide(ctx, me, dst_leaf, cands, Some(port));
                    self.flowlets[sw.idx()].as_mut().unwrap().set(p.hash, c);
                    c
                }
                Lookup::New(None) => {
                    self.flowlets_started += 1;
                    let c = self.decide(ctx, me, dst_leaf, cands, None);
                    self.flowlets[sw.idx()].as_mut().unwrap().set(p.hash, c);
                    c
                }
            };
            let tag = self.tag_of[port.idx()];
            let fb = self.pick_feedback(me, dst_leaf);
            if fb.is_some() {
                self.feedback_sent += 1;
            }
            let (fb_valid, fb_lbtag, fb_metric) = match fb {
                Some((t, m)) => (true, t, m),
                None => (false, 0, 0),
            };
            ctx.pkt_mut(pkt).lb = LbHeader::Conga { lbtag: tag, ce: 0, fb_valid, fb_lbtag, fb_metric };
            return Forward::Port(port);
        }
        if let LbHeader::Conga { lbtag, ce, fb_valid, fb_lbtag, fb_metric } = p.lb {
            if dst_leaf == me && src_leaf != me {
                // destination leaf: store the path metric, take the feedback, decapsulate
                let i = self.idx(me, src_leaf, lbtag as usize);
                let e = &mut self.from_leaf[i];
                e.changed |= !e.valid || e.value != ce;
                e.value = ce;
                e.valid = true;
                if fb_valid {
                    let j = self.idx(me, src_leaf, fb_lbtag as usize);
                    self.to_leaf[j] = Remote { value: fb_metric, at: ctx.now, valid: true };
                    if let Some(&up) = self.uplinks[me].get(fb_lbtag as usize) {
                        let r = &mut self.remote_reports[up.idx()];
                        r.0 += 1;
                        r.1 += fb_metric as u64;
                    }
                }
                ctx.pkt_mut(pkt).lb = LbHeader::None;
            }
        }
        Forward::Port(ctx.ecmp(sw, pkt, cands))
    }

    fn wants_enqueue(&self) -> bool {
        true
    }

    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        if !self.fabric_port[port.idx()] {
            return;
        }
        let size = ctx.pkt(pkt).size as u64;
        self.dre[port.idx()].add(&self.dre_p, ctx.now, size);
        if let LbHeader::Conga { ce, .. } = ctx.pkt(pkt).lb {
            let m = self.local(ctx, port);
            if m > ce {
                if let LbHeader::Conga { ce, .. } = &mut ctx.pkt_mut(pkt).lb {
                    *ce = m;
                }
            }
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("flowlets", self.flowlets_started as f64), ("feedback_metrics_sent", self.feedback_sent as f64)]
    }

    /// What each leaf learnt about each of its paths (by uplink tag).
    fn report(&self, topo: &Topology) -> Vec<ReportTable> {
        let mut t = ReportTable::new("remote_metric_by_uplink");
        for (p, n, m) in self.remote_by_uplink() {
            let port = &topo.ports[p.idx()].name;
            t.push([port.clone(), "reports".into()], ReportValue::Count(n));
            t.push([port.clone(), "mean_metric".into()], ReportValue::Real(m));
        }
        vec![t]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use std::collections::BTreeMap;

    fn conga(env: &Env) -> Conga {
        let given = BTreeMap::new();
        Conga::new(&Params::new(&given, PARAMS, "conga").unwrap(), &env.topo).unwrap()
    }

    #[test]
    fn new_flowlet_takes_the_uplink_minimising_max_local_remote() {
        let mut env = Env::testbed();
        let mut c = conga(&env);
        let l0 = env.topo.node_by_name("L0").unwrap();
        let up: Vec<PortId> = c.uplinks(0).to_vec();
        assert_eq!(up.len(), 4);
        // local metrics: 6, 1, 3, 0 (bytes into the DREs at t = 0)
        let now = SimTime::from_us(1);
        let tau_bytes = 40e9 / 8.0 * 160e-6; // C * tau at 40G
        for (i, frac) in [0.8, 0.15, 0.4, 0.0].iter().enumerate() {
            c.dre[up[i].idx()].add(&c.dre_p, now, (frac * tau_bytes) as u64);
        }
        // remote metrics from L0 to L1: 0, 5, 2, 7
        for (tag, v) in [0u8, 5, 2, 7].iter().enumerate() {
            let i = c.idx(0, 1, tag);
            c.to_leaf[i] = Remote { value: *v, at: now, valid: true };
        }
        // max(local, remote) = 6, 5, 3, 7 -> uplink 2
        let pkt = env.packet(0, 20, 1000);
        let cands = env.routing.next_hops(l0, 20).to_vec();
        let in_port = env.topo.ports[env.topo.nic(env.topo.host(0)).idx()].peer;
        let f = c.on_switch(&mut env.ctx(now), l0, in_port, pkt, &cands);
        assert_eq!(f, Forward::Port(up[2]));
        assert!(matches!(env.pkts.get(pkt.0).lb, LbHeader::Conga { lbtag: 2, ce: 0, .. }));
        // the same flow stays on its flowlet's port even if metrics change
        for (tag, v) in [0u8, 5, 7, 7].iter().enumerate() {
            let i = c.idx(0, 1, tag);
            c.to_leaf[i] = Remote { value: *v, at: now, valid: true };
        }
        let pkt2 = env.same_flow(pkt);
        assert_eq!(c.on_switch(&mut env.ctx(now + SimTime::from_us(10)), l0, in_port, pkt2, &cands), Forward::Port(up[2]));
        // after an idle gap of 2 T_fl it moves to the now-best uplink
        let later = now + SimTime::from_us(1100);
        let pkt3 = env.same_flow(pkt);
        let f3 = c.on_switch(&mut env.ctx(later), l0, in_port, pkt3, &cands);
        // local DREs have decayed by (31/32)^220 ~ 0: costs are the remote metrics 0,5,7,7
        assert_eq!(f3, Forward::Port(up[0]));
    }

    #[test]
    fn remote_metrics_age_toward_zero() {
        let env = Env::testbed();
        let mut c = conga(&env);
        let i = c.idx(0, 1, 3);
        c.to_leaf[i] = Remote { value: 6, at: SimTime::ZERO, valid: true };
        assert_eq!(c.remote(0, 1, 3, SimTime::from_ms(9)), 6);
        assert_eq!(c.remote(0, 1, 3, SimTime::from_ms(15)), 3);
        assert_eq!(c.remote(0, 1, 3, SimTime::from_ms(25)), 1);
        assert_eq!(c.remote(0, 1, 3, SimTime::from_ms(35)), 0);
        assert_eq!(c.remote(0, 1, 2, SimTime::from_ms(1)), 0, "unknown metrics count as 0");
    }

    #[test]
    fn feedback_round_robin_favours_changed_metrics() {
        let env = Env::testbed();
        let mut c = conga(&env);
        // leaf 1 has heard from leaf 0 on tags 0..3
        for (tag, v) in [1u8, 2, 3, 4].iter().enumerate() {
            let i = c.idx(1, 0, tag);
            c.from_leaf[i] = FromLeaf { value: *v, valid: true, changed: true };
        }
        let got: Vec<u8> = (0..4).map(|_| c.pick_feedback(1, 0).unwrap().0).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
        // only tag 2 changes: it is sent next, out of turn
        let i = c.idx(1, 0, 2);
        c.from_leaf[i] = FromLeaf { value: 7, valid: true, changed: true };
        assert_eq!(c.pick_feedback(1, 0), Some((2, 7)));
        // nothing changed: plain round robin continues after the last sent
        assert_eq!(c.pick_feedback(1, 0).unwrap().0, 3);
        assert_eq!(c.pick_feedback(1, 0).unwrap().0, 0);
        // no metric known from leaf 1: no feedback (only real packets carry it)
        assert_eq!(c.pick_feedback(0, 1), None);
    }
}
