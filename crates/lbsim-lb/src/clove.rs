//! Clove (Katta et al., CoNEXT 2017, §3): congestion-aware flowlet load
//! balancing in the source hypervisor over plain ECMP switches, steering by
//! the outer source port. Two variants share this file:
//!
//! **Clove-ECN** (§3.2 "Clove-ECN", §4): the source edge sets ECT on the
//! outer header; switches mark CE above the ECN threshold (the paper's 20
//! packets is this scheme's default for `network.ecn_k_pkts`). The
//! receiving edge takes the CE mark off (the VMs never see underlay ECN,
//! §4) and relays (outer source port, ecnSet) in the encapsulation of
//! reverse packets, at most once per relay interval per path (default
//! RTT/2); the ecnSet bit says whether the path's packets since its last
//! report were marked, so a report is relayed for every path that carries
//! traffic, congested or not (§4). The source keeps per-destination weights
//! over its ports: a report with ecnSet cuts that path's weight by
//! `weight_cut` (1/3), marks it congested and spreads the cut equally over
//! the paths not currently congested; a report without ecnSet marks the
//! path uncongested (weights change only on ECN, §3.2); new flowlets follow
//! a weighted round robin. The source edge
//! relays ECN to its VM (ECE on the ACKs it passes up) only while every
//! path to that destination is congested — before discovery has found the
//! paths, while the one hashed path in use is. That is the paper's design
//! and the default (`guest_sees_ce = false`): the guest transport stays
//! unaware of underlay marks (§4), so a DCTCP guest reduces its window only
//! while every path is congested. `guest_sees_ce = true` is the other
//! reading, as the Hermes authors' ns-3 Clove has it: CE goes on to the
//! receiving guest and the ACKs' ECE to the sending one untouched, the
//! relay still feeding the weights.
//! Weights change only as §3.2 says: a report cuts one path and spreads
//! the cut over the others, so a starved path regains weight when the
//! others are cut in turn. *Our choices where the paper is silent:* within
//! one relay interval, a path's report has ecnSet if any of its packets was
//! marked; a congested mark that no report renews or clears expires after
//! `congested_expiry_rtts` (a path the source stopped using gets no
//! reports); a remapped path set (after re-discovery) restarts at equal weights; an
//! optional relaxation of the weights back toward equal
//! (`weight_recovery_us` > 0) is off by default — with it at 1 ms, as we
//! first had, the weights forgot a degraded path within a millisecond and
//! Clove-ECN steered nothing.
//!
//! Every "RTT" resolves from `rtt_us` (the experiments state the paper's
//! testbed-scale RTT); the resolved values are in the summary
//! (`scheme.resolved`).
//!
//! **Clove-INT** (§3.2 "Clove-INT"): every switch writes its egress link
//! utilisation into a path-max header field (estimated by a DRE, τ =
//! `util_tau_us`); the receiver relays (port, max utilisation); each new
//! flowlet takes the least-utilised path. Only switch-to-switch links are
//! stamped (the destination leaf's host link is common to every path and
//! would mask the difference). *Our choices:* utilisation is
//! compared quantised to `util_q_bits` (3, as CONGA's metric) and a flowlet
//! stays on its flow's current path unless another is strictly less
//! utilised (CONGA §3.5's tie rule; without it flows flap between paths
//! whose utilisation differs by noise); other ties at random. Reports age
//! as CONGA's remote metrics (§3.3, 10 ms): halved for every `util_age_us`
//! without an update. (Forgetting a report outright after 1 ms, our first
//! choice, made every quiet path look idle at once, and all new flowlets of
//! a source herded onto it: 2x CONGA's FCT at 80 % load.) A path never
//! reported counts as idle. A flowlet that would leave its current path
//! adds its flow's own rate (a per-flow DRE with the switches' τ, as it was
//! when the flow last sent and then aged like a report, over the path's
//! slowest fabric link) to the
//! other path's report before comparing: the current path's report already
//! contains the flow, the other's does not. Without this, a flow that fills
//! a path by itself sees "1.0 here, less elsewhere" whenever its report of
//! another path has aged, and two such flows from different hosts move
//! together and collide again (see `int_pick`).

use crate::dre::{Dre, DreParams};
use crate::edge::{hashed_port, set_clove_header, Discovery, Flowlets, IdMap, PathUse, Relay, Wrr};
use crate::edge_params::{self, num, FLOWLET_GAP_US, RTT};
use crate::params::{DefaultValue, ParamDef, ParamError, Params, GUEST_SEES_CE};
use crate::SchemeEnv;
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, HostRx, LbHeader, LoadBalancer, NodeId, Payload, PktId, PortId};
use lbsim_tcp::header::ECE;

macro_rules! clove_params {
    ($($extra:expr),*) => {
        crate::with_discovery![
            num("flowlet_gap_rtts", "RTT", 2.0, "idle gap that starts a new flowlet, in RTTs (§3.2 recommends 2; §5 found 1 best on the testbed)"),
            num("relay_interval_rtts", "RTT", 0.5, "the receiver relays a path's state at most once per this interval (§3.2: RTT/2)"),
            $($extra,)*
            FLOWLET_GAP_US,
            RTT,
        ]
    };
}

pub const ECN_PARAMS: &[ParamDef] = clove_params!(
    num("weight_cut", "fraction", 1.0 / 3.0, "share of a path's weight removed on an ECN report (§3.2: a third)"),
    num("congested_expiry_rtts", "RTT", 5.0, "a path is congested from a report with ecnSet until one without it (§4); a mark no report renews or clears expires after this long (our choice: the relay's 10 intervals of RTT/2, after which it drops an unsent report as stale)"),
    num("weight_recovery_us", "us", 0.0, "0 (default, §3.2): weights change only on ECN reports; > 0: they also relax back to equal with this time constant (an option of ours, not in the paper)"),
    ParamDef {
        name: GUEST_SEES_CE,
        unit: "",
        default: DefaultValue::Bool(false),
        help: "false (default, §4 and §3.2): the receiving edge clears CE, and the sending edge passes ECE to the guest only while every path to the destination is congested; true: CE reaches the receiving guest and ECE the sending one untouched (the other reading, as the Hermes authors' ns-3 Clove)"
    }
);

pub const INT_PARAMS: &[ParamDef] = clove_params!(
    num("util_tau_us", "us", 160.0, "time constant of the switches' utilisation estimator (DRE, as CONGA §3.2)"),
    num("util_q_bits", "bits", 3.0, "utilisation is compared quantised to this many bits (our choice, as CONGA's Q)"),
    num("util_age_us", "us", 10000.0, "a utilisation report is halved for every this long without an update (CONGA §3.3's metric aging)")
);

#[derive(Clone, Debug, Default)]
struct DestState {
    epoch: u32,
    weights: Vec<f64>,
    congested_until: Vec<SimTime>,
    util: Vec<(u16, SimTime)>,
    updated: SimTime,
    wrr: Wrr,
}

pub struct Clove {
    int: bool,
    /// Clove-ECN: CE and ECE reach the guests untouched.
    guest_sees_ce: bool,
    disc: Discovery,
    pub flowlets: Flowlets,
    relay: Relay,
    dests: Vec<IdMap<u32, DestState>>,
    cut: f64,
    hold: SimTime,
    recovery: SimTime,
    dre_p: DreParams,
    dre: Vec<Dre>,
    fabric_port: Vec<bool>,
    /// Per (source host, destination): until when the hashed pre-discovery
    /// path counts as congested.
    pre_congested: Vec<IdMap<u32, SimTime>>,
    /// Clove-INT: per source host, each flow's own sending rate (a DRE with
    /// the switches' τ) and when it last sent, keyed by the inner 5-tuple hash.
    flow_rate: Vec<IdMap<u64, (Dre, SimTime)>>,
    util_age: SimTime,
    util_q: u8,
    pub ecn_reports: u64,
    /// Reports without ecnSet (the path is not congested).
    pub clear_reports: u64,
    pub ece_masked: u64,
    pub ece_relayed: u64,
    /// The timers as resolved (µs), for the summary.
    pub resolved: Vec<(&'static str, f64)>,
    pub path_use: PathUse,
}

impl Clove {
    pub fn new(p: &Params, env: &SchemeEnv, int: bool) -> Result<Self, ParamError> {
        let rtt = edge_params::rtt(p, env.base_rtt)?;
        let in_rtts = |k: &str| p.in_rtts(k, rtt);
        let hosts = env.topo.num_hosts();
        let (cut, hold, recovery, util_tau, util_age) = if int {
            (0.0, SimTime::ZERO, SimTime::ZERO, p.duration("util_tau_us", false)?.as_us_f64(), p.duration("util_age_us", false)?)
        } else {
            let cut = p.positive("weight_cut")?;
            if cut >= 1.0 {
                return Err(ParamError { key: "weight_cut".into(), msg: format!("must be below 1, got {cut}") });
            }
            (cut, in_rtts("congested_expiry_rtts")?, p.duration("weight_recovery_us", true)?, 160.0, SimTime::ZERO)
        };
        let period = (util_tau / 32.0).max(0.1);
        let (gap, relay) = (edge_params::flowlet_gap(p, rtt)?, in_rtts("relay_interval_rtts")?);
        Ok(Clove {
            int,
            guest_sees_ce: !int && p.boolean(GUEST_SEES_CE)?,
            disc: Discovery::new(edge_params::discovery(p)?, hosts),
            flowlets: Flowlets::new(gap, hosts),
            relay: Relay::new(relay, hosts),
            path_use: PathUse::new(env.topo),
            resolved: vec![
                ("rtt_us", rtt.as_us_f64()),
                ("flowlet_gap_us", gap.as_us_f64()),
                ("relay_interval_us", relay.as_us_f64()),
                ("congested_expiry_us", hold.as_us_f64()),
            ],
            dests: (0..hosts).map(|_| IdMap::default()).collect(),
            cut,
            hold,
            recovery,
            dre_p: DreParams { t_dre: SimTime::from_us_f64(period), alpha: period / util_tau, q_bits: 8 },
            dre: if int { vec![Dre::default(); env.topo.ports.len()] } else { vec![] },
            fabric_port: env.topo.fabric_ports(),
            pre_congested: (0..hosts).map(|_| IdMap::default()).collect(),
            flow_rate: (0..hosts).map(|_| IdMap::default()).collect(),
            util_age,
            util_q: if int { p.count("util_q_bits", 16)? as u8 } else { 3 },
            ecn_reports: 0,
            clear_reports: 0,
            ece_masked: 0,
            ece_relayed: 0,
        })
    }

    pub fn discovery(&self) -> &Discovery {
        &self.disc
    }

    /// The state toward `dst`, reset if the path set changed.
    fn dest(&mut self, src: u32, dst: u32, n: usize, epoch: u32) -> &mut DestState {
        let d = self.dests[src as usize].entry(dst).or_default();
        if d.epoch != epoch || d.weights.len() != n {
            *d = DestState {
                epoch,
                weights: vec![1.0 / n.max(1) as f64; n],
                congested_until: vec![SimTime::ZERO; n],
                util: vec![(0, SimTime::ZERO); n],
                ..Default::default()
            };
        }
        d
    }

    /// Relaxes weights toward equal for the time since the last update.
    fn recover(&self, d: &mut DestState, now: SimTime) {
        let n = d.weights.len();
        if n == 0 || now <= d.updated || self.recovery == SimTime::ZERO {
            return;
        }
        let f = 1.0 - (-((now - d.updated).0 as f64) / self.recovery.0 as f64).exp();
        for w in &mut d.weights {
            *w += (1.0 / n as f64 - *w) * f;
        }
        d.updated = now;
    }

    /// Current weights toward `dst` (for tests and reporting).
    pub fn weights(&self, src: u32, dst: u32) -> Option<Vec<f64>> {
        self.dests[src as usize].get(&dst).map(|d| d.weights.clone())
    }

    /// Applies a relayed report about path `port` from `src` to `dst`.
    fn feedback(&mut self, src: u32, dst: u32, port: u16, ce: bool, util: u16, now: SimTime) {
        let known = self.disc.get(src, dst).and_then(|set| set.ports.iter().position(|&p| p == port).map(|i| (i, set.ports.len(), set.epoch)));
        let Some((i, n, epoch)) = known else {
            // a report about the hashed pre-discovery path (or a remapped port)
            if !self.int {
                if ce {
                    self.pre_congested[src as usize].insert(dst, now + self.hold);
                } else {
                    self.pre_congested[src as usize].remove(&dst);
                }
            }
            return;
        };
        let int = self.int;
        let (cut, hold) = (self.cut, self.hold);
        let mut d = std::mem::take(self.dest(src, dst, n, epoch));
        if int {
            d.util[i] = (util, now);
        } else if ce {
            self.ecn_reports += 1;
            self.recover(&mut d, now);
            apply_ecn_cut(&mut d.weights, &d.congested_until, i, cut, now);
            d.congested_until[i] = now + hold;
        } else {
            // the relay says the path is not congested (§4's ecnSet = 0)
            self.clear_reports += 1;
            d.congested_until[i] = SimTime::ZERO;
        }
        *self.dests[src as usize].get_mut(&dst).unwrap() = d;
    }

    /// Whether every path toward `dst` is congested: the known paths once
    /// discovery has found them, else the single hashed path in use.
    fn all_congested(&self, src: u32, dst: u32, now: SimTime) -> bool {
        let set = self.disc.get(src, dst);
        match (set, self.dests[src as usize].get(&dst)) {
            (Some(set), Some(d)) if !set.ports.is_empty() && d.epoch == set.epoch && !d.congested_until.is_empty() => {
                d.congested_until.iter().all(|&t| t > now)
            }
            (Some(set), _) if !set.ports.is_empty() => false,
            _ => self.pre_congested[src as usize].get(&dst).is_some_and(|&t| t > now),
        }
    }
}

/// The bottleneck rate of a discovered path: its slowest switch-to-switch
/// link (0 when the path has none, e.g. within one leaf). The hypervisor
/// knows its fabric's link speeds (static configuration); with INT, the
/// switches could equally stamp the rate beside the utilisation.
fn path_capacity_bps(ctx: &Ctx, path: &[PortId], fabric_port: &[bool]) -> u64 {
    path.iter().filter(|p| fabric_port[p.idx()]).map(|p| ctx.ports[p.idx()].rate.0).min().unwrap_or(0)
}

/// Clove-INT's choice for a new flowlet (§3.2: the least-utilised path).
/// `util[j]` is path j's reported (aged) utilisation, `share[j]` the
/// utilisation this flow's own recent rate is worth on path j, `current`
/// the flow's path if it has one. The current path costs its report (which
/// already includes the flow); any other path costs its report plus the
/// flow's share, so a flow that fills its path by itself is not drawn to a
/// path that merely looks less busy. Costs are compared quantised to
/// `q_bits`; ties keep the current path, else go at random (`below(n)`
/// draws from 0..n).
pub fn int_pick(util: &[f64], share: &[f64], current: Option<usize>, q_bits: u8, mut below: impl FnMut(u64) -> u64) -> usize {
    let cost: Vec<u8> = (0..util.len()).map(|j| crate::dre::quantise(util[j] + if Some(j) == current { 0.0 } else { share[j] }, q_bits)).collect();
    let best = *cost.iter().min().unwrap();
    if let Some(c) = current.filter(|&c| cost[c] == best) {
        return c;
    }
    let ties: Vec<usize> = (0..cost.len()).filter(|&j| cost[j] == best).collect();
    if ties.len() == 1 {
        return ties[0];
    }
    ties[below(ties.len() as u64) as usize]
}

/// Clove-ECN's reaction (§3.2): cut path `i` by `cut` of its weight and
/// spread the removed weight equally over the other paths that are not
/// congested (over all others if every one is).
pub fn apply_ecn_cut(w: &mut [f64], congested_until: &[SimTime], i: usize, cut: f64, now: SimTime) {
    let delta = w[i] * cut;
    w[i] -= delta;
    let mut others: Vec<usize> = (0..w.len()).filter(|&j| j != i && congested_until[j] <= now).collect();
    if others.is_empty() {
        others = (0..w.len()).filter(|&j| j != i).collect();
    }
    if others.is_empty() {
        w[i] += delta;
        return;
    }
    let share = delta / others.len() as f64;
    for j in others {
        w[j] += share;
    }
}

impl LoadBalancer for Clove {
    /// Host-side only: switches forward by plain ECMP.
    fn wants_switch_hook(&self) -> bool {
        false
    }
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        let p = *ctx.pkt(pkt);
        if matches!(p.payload, Payload::Control { .. }) {
            return;
        }
        let (src, dst) = (ctx.topo.host_index(host), ctx.topo.host_index(p.dst));
        let set = self.disc.paths(ctx, src, dst);
        let (ports, epoch) = (set.ports.clone(), set.epoch);
        let now = ctx.now;
        let (f, new) = self.flowlets.touch(src, p.inner_hash(), now, epoch);
        let mut port = f.port;
        let current = f.port;
        if new {
            port = if ports.is_empty() {
                hashed_port(&p)
            } else {
                let int = self.int;
                let util_age = self.util_age;
                let mut d = std::mem::take(self.dest(src, dst, ports.len(), epoch));
                let i = if int {
                    // least utilised path (aged reports; unknown paths count as
                    // 0), counting what this flow itself would add to a path it
                    // is not on yet
                    // the flow's rate as it was when it last sent (a gap, e.g. a
                    // retransmission timeout, does not make its traffic vanish
                    // from the reports it is compared with), aged as they are
                    let flow = self.flow_rate[src as usize].get_mut(&p.inner_hash()).map_or(0.0, |(r, last)| {
                        let periods = ((now - *last).0 / util_age.0.max(1)).min(64) as i32;
                        r.value(&self.dre_p, *last) * 0.5f64.powi(periods)
                    });
                    let tau_s = self.dre_p.tau().as_secs_f64();
                    let set = self.disc.get(src, dst).unwrap();
                    let util: Vec<f64> = d.util.iter().map(|&(u, t)| crate::dre::aged(u as u32, now - t, util_age) as f64 / 1000.0).collect();
                    let share: Vec<f64> = (0..ports.len())
                        .map(|j| {
                            let cap = path_capacity_bps(ctx, &set.paths[j], &self.fabric_port);
                            if cap == 0 {
                                0.0
                            } else {
                                flow / (cap as f64 / 8.0 * tau_s)
                            }
                        })
                        .collect();
                    let cur = ports.iter().position(|&x| x == current);
                    int_pick(&util, &share, cur, self.util_q, |n| ctx.rng.below(n))
                } else {
                    self.recover(&mut d, now);
                    if let (true, Some(set)) = (p.is_data(), self.disc.get(src, dst)) {
                        self.path_use.record_weights(ctx.topo, &set.paths, &d.weights);
                    }
                    d.wrr.pick(&d.weights)
                };
                *self.dests[src as usize].get_mut(&dst).unwrap() = d;
                ports[i]
            };
            self.flowlets.touch(src, p.inner_hash(), now, epoch).0.port = port;
        }
        if p.is_data() {
            if let Some(i) = ports.iter().position(|&x| x == port) {
                self.path_use.record(ctx.topo, &self.disc.get(src, dst).unwrap().paths[i], new, p.size as u64);
            }
        }
        if self.int {
            let (r, last) = self.flow_rate[src as usize].entry(p.inner_hash()).or_default();
            r.add(&self.dre_p, now, p.size as u64);
            *last = now;
        }
        let fb = self.relay.take(src, dst, now);
        let pm = ctx.pkt_mut(pkt);
        pm.set_outer_sport(port);
        set_clove_header(pm, fb);
        if !self.int {
            pm.ect = true; // the outer header is ECN-capable (§3.2)
        }
    }

    fn wants_enqueue(&self) -> bool {
        self.int
    }

    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        if !self.fabric_port[port.idx()] {
            return;
        }
        let size = ctx.pkt(pkt).size as u64;
        let rate = ctx.ports[port.idx()].rate.0;
        let d = &mut self.dre[port.idx()];
        d.add(&self.dre_p, ctx.now, size);
        let u = (d.utilisation(&self.dre_p, ctx.now, rate) * 1000.0).round().min(u16::MAX as f64) as u16;
        if let LbHeader::Clove { int_util, .. } = &mut ctx.pkt_mut(pkt).lb {
            *int_util = (*int_util).max(u);
        }
    }

    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        if self.disc.on_receive(ctx, pkt) {
            return HostRx::Consume;
        }
        let p = *ctx.pkt(pkt);
        let LbHeader::Clove { fb_valid, fb_port, fb_ce, fb_util, int_util } = p.lb else { return HostRx::Deliver };
        let (me, peer) = (ctx.topo.host_index(host), ctx.topo.host_index(p.src));
        let now = ctx.now;
        // 1. feedback about my paths toward `peer`
        if fb_valid {
            self.feedback(me, peer, fb_port, fb_ce, fb_util, now);
        }
        // 2. what this packet saw on the path from `peer`, to relay back
        if let Some(port) = p.outer_sport {
            if self.int {
                self.relay.observe(me, peer, port, false, int_util, now);
            } else {
                // every packet: its path's ecnSet, set or not (§4)
                self.relay.observe(me, peer, port, p.ce, 0, now);
            }
        }
        let pm = ctx.pkt_mut(pkt);
        pm.lb = LbHeader::None;
        if self.int || self.guest_sees_ce {
            return HostRx::Deliver;
        }
        // 3. the VMs never see underlay ECN ...
        pm.ce = false;
        // 4. ... except that the sending VM is told (ECE on its ACKs) while
        // every path to that destination is congested
        let all = self.all_congested(me, peer, now);
        if let Payload::Tcp { hdr, to_receiver: false, .. } = &mut ctx.pkt_mut(pkt).payload {
            if all {
                hdr.flags |= ECE;
                self.ece_relayed += 1;
            } else if hdr.has(ECE) {
                hdr.flags &= !ECE;
                self.ece_masked += 1;
            }
        }
        HostRx::Deliver
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.disc.on_timer(ctx, token);
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("flowlets", self.flowlets.count as f64),
            ("ecn_reports", self.ecn_reports as f64),
            ("clear_reports", self.clear_reports as f64),
            ("ece_masked", self.ece_masked as f64),
            ("ece_relayed", self.ece_relayed as f64),
        ];
        v.extend(self.discovery().stats());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_net::{Packet, Proto};
    use lbsim_tcp::TcpHeader;
    use std::collections::BTreeMap;

    fn clove(env: &Env, int: bool) -> Clove {
        let mut given = BTreeMap::new();
        given.insert("discovery".to_string(), crate::Value::Str("oracle".into()));
        let defs = if int { INT_PARAMS } else { ECN_PARAMS };
        let e = env.scheme_env();
        Clove::new(&Params::new(&given, defs, "clove").unwrap(), &e, int).unwrap()
    }

    /// An ACK from host `from` to host `to` carrying a Clove header.
    fn ack(env: &mut Env, from: u32, to: u32, ece: bool, fb: Option<(u16, bool, u16)>) -> PktId {
        let mut hdr = TcpHeader { flags: lbsim_tcp::header::ACK, ..Default::default() };
        if ece {
            hdr.flags |= ECE;
        }
        let mut p =
            Packet::new(env.topo.host(from), env.topo.host(to), 80, 1000, Proto::Tcp, 52, Payload::Tcp { conn: 0, to_receiver: false, hdr }, SimTime::ZERO);
        p.set_outer_sport(777);
        set_clove_header(&mut p, fb);
        PktId(env.pkts.insert(p))
    }

    fn has_ece(env: &Env, p: PktId) -> bool {
        env.pkts.get(p.0).tcp().unwrap().has(ECE)
    }

    #[test]
    fn ecn_is_hidden_from_the_sender_unless_every_path_is_congested() {
        let mut env = Env::testbed();
        let mut c = clove(&env, false);
        let host0 = env.topo.host(0);
        // host 0 sends to host 20: discovery (oracle) gives 4 paths
        let data = env.packet(0, 20, 1500);
        let now = SimTime::from_us(10);
        c.on_host_send(&mut env.ctx(now), host0, data);
        let ports = c.discovery().get(0, 20).unwrap().ports.clone();
        assert_eq!(ports.len(), 4);
        // an ECN report for path 0 arrives on an ACK that also carries ECE
        let a = ack(&mut env, 20, 0, true, Some((ports[0], true, 0)));
        assert_eq!(c.on_host_receive(&mut env.ctx(now), host0, a), HostRx::Deliver);
        assert!(!has_ece(&env, a), "one path congested, three not: ECE masked");
        assert_eq!(c.ece_masked, 1);
        let w = c.weights(0, 20).unwrap();
        assert!(w[0] < w[1] && (w.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{w:?}");
        // reports for the other three paths: now every path is congested
        for &p in &ports[1..] {
            let a = ack(&mut env, 20, 0, false, Some((p, true, 0)));
            c.on_host_receive(&mut env.ctx(now), host0, a);
        }
        let a = ack(&mut env, 20, 0, false, None);
        c.on_host_receive(&mut env.ctx(now), host0, a);
        assert!(has_ece(&env, a), "all paths congested: the edge relays ECN to the VM");
        // the relay says path 2 is no longer congested: masking resumes at
        // once, and the weights do not move (only ECN changes them)
        let w = c.weights(0, 20).unwrap();
        let a = ack(&mut env, 20, 0, true, Some((ports[2], false, 0)));
        c.on_host_receive(&mut env.ctx(now + SimTime::from_us(1)), host0, a);
        assert!(!has_ece(&env, a), "one path clear: ECE masked");
        assert_eq!(c.weights(0, 20).unwrap(), w);
        assert_eq!(c.clear_reports, 1);
        // with every path congested again, a mark no report renews expires
        // after 5 RTTs (100 us)
        let a = ack(&mut env, 20, 0, false, Some((ports[2], true, 0)));
        c.on_host_receive(&mut env.ctx(now + SimTime::from_us(2)), host0, a);
        let a = ack(&mut env, 20, 0, true, None);
        c.on_host_receive(&mut env.ctx(now + SimTime::from_us(50)), host0, a);
        assert!(has_ece(&env, a), "still within the expiry");
        let a = ack(&mut env, 20, 0, true, None);
        c.on_host_receive(&mut env.ctx(now + SimTime::from_us(103)), host0, a);
        assert!(!has_ece(&env, a));
    }

    #[test]
    fn with_guest_sees_ce_marks_and_echoes_reach_the_guests_untouched() {
        let mut env = Env::testbed();
        let mut given = BTreeMap::new();
        given.insert("discovery".to_string(), crate::Value::Str("oracle".into()));
        given.insert(GUEST_SEES_CE.to_string(), crate::Value::Bool(true));
        let e = env.scheme_env();
        let mut c = Clove::new(&Params::new(&given, ECN_PARAMS, "clove").unwrap(), &e, false).unwrap();
        let host0 = env.topo.host(0);
        let now = SimTime::from_us(10);
        let data = env.packet(0, 20, 1500);
        c.on_host_send(&mut env.ctx(now), host0, data);
        let ports = c.discovery().get(0, 20).unwrap().ports.clone();
        // one path congested, three not: the ECE stays (no masking) ...
        let a = ack(&mut env, 20, 0, true, Some((ports[0], true, 0)));
        c.on_host_receive(&mut env.ctx(now), host0, a);
        assert!(has_ece(&env, a));
        assert_eq!(c.ece_masked, 0);
        // ... the report still cuts the path's weight ...
        let w = c.weights(0, 20).unwrap();
        assert!(w[0] < w[1], "{w:?}");
        // ... and a CE-marked packet keeps its mark
        let a = ack(&mut env, 20, 0, false, None);
        env.pkts.get_mut(a.0).ce = true;
        c.on_host_receive(&mut env.ctx(now), host0, a);
        assert!(env.pkts.get(a.0).ce && !has_ece(&env, a), "CE kept; no ECE added");
        assert_eq!(c.ece_relayed, 0);
    }

    #[test]
    fn before_discovery_the_hashed_path_alone_decides_ecn_relay() {
        let mut env = Env::testbed();
        let mut given = BTreeMap::new();
        given.insert("discovery".to_string(), crate::Value::Str("probe".into()));
        let e = env.scheme_env();
        let mut c = Clove::new(&Params::new(&given, ECN_PARAMS, "clove").unwrap(), &e, false).unwrap();
        let host0 = env.topo.host(0);
        let now = SimTime::from_us(10);
        let data = env.packet(0, 20, 1500);
        c.on_host_send(&mut env.ctx(now), host0, data); // starts probing; no paths yet
        assert!(c.discovery().get(0, 20).unwrap().ports.is_empty());
        let a = ack(&mut env, 20, 0, false, Some((4242, true, 0)));
        c.on_host_receive(&mut env.ctx(now), host0, a);
        assert!(has_ece(&env, a), "the only path in use is congested: relayed");
        let b = ack(&mut env, 20, 0, false, Some((4242, false, 0)));
        c.on_host_receive(&mut env.ctx(now + SimTime::from_us(1)), host0, b);
        assert!(!has_ece(&env, b), "the relay cleared it");
    }

    #[test]
    fn the_receiving_vm_never_sees_underlay_ce() {
        let mut env = Env::testbed();
        let mut c = clove(&env, false);
        let h20 = env.topo.host(20);
        let d = env.packet(0, 20, 1500);
        {
            let p = env.pkts.get_mut(d.0);
            p.set_outer_sport(4242);
            set_clove_header(p, None);
            p.ce = true;
        }
        c.on_host_receive(&mut env.ctx(SimTime::from_us(5)), h20, d);
        assert!(!env.pkts.get(d.0).ce);
    }

    #[test]
    fn clove_int_sends_new_flowlets_on_the_least_utilised_path() {
        let mut env = Env::testbed();
        let mut c = clove(&env, true);
        let host0 = env.topo.host(0);
        let now = SimTime::from_us(10);
        let first = env.packet(0, 20, 1500);
        c.on_host_send(&mut env.ctx(now), host0, first);
        let ports = c.discovery().get(0, 20).unwrap().ports.clone();
        // utilisation reports: 0.9, 0.3, 0.6, 0.7 (per mille)
        for (p, u) in ports.iter().zip([900u16, 300, 600, 700]) {
            let a = ack(&mut env, 20, 0, false, Some((*p, false, u)));
            c.on_host_receive(&mut env.ctx(now), host0, a);
        }
        for k in 0..5 {
            let p = env.packet(0, 20, 1500); // a new flow: a new flowlet
            c.on_host_send(&mut env.ctx(now + SimTime::from_us(k)), host0, p);
            assert_eq!(env.pkts.get(p.0).outer_sport, Some(ports[1]));
        }
    }

    #[test]
    fn clove_int_reports_age_so_a_busy_path_is_tried_again() {
        let mut env = Env::testbed();
        let mut c = clove(&env, true);
        let host0 = env.topo.host(0);
        let t0 = SimTime::from_us(10);
        let first = env.packet(0, 20, 1500);
        c.on_host_send(&mut env.ctx(t0), host0, first);
        let ports = c.discovery().get(0, 20).unwrap().ports.clone();
        let report = |c: &mut Clove, env: &mut Env, now: SimTime, which: &[(usize, u16)]| {
            for &(i, u) in which {
                let a = ack(env, 20, 0, false, Some((ports[i], false, u)));
                c.on_host_receive(&mut env.ctx(now), host0, a);
            }
        };
        report(&mut c, &mut env, t0, &[(0, 900), (1, 300), (2, 300), (3, 300)]);
        let chosen = |c: &mut Clove, env: &mut Env, now: SimTime| {
            let p = env.packet(0, 20, 1500);
            c.on_host_send(&mut env.ctx(now), host0, p);
            env.pkts.get(p.0).outer_sport.unwrap()
        };
        // 5 ms later the 0.9 report still stands: path 0 is avoided
        let t1 = t0 + SimTime::from_us(5_000);
        report(&mut c, &mut env, t1, &[(1, 300), (2, 300), (3, 300)]);
        for _ in 0..8 {
            assert_ne!(chosen(&mut c, &mut env, t1), ports[0]);
        }
        // 40 ms after it (4 aging periods of 10 ms) it has decayed to 0.056
        let t2 = t0 + SimTime::from_us(40_000);
        report(&mut c, &mut env, t2, &[(1, 300), (2, 300), (3, 300)]);
        assert_eq!(chosen(&mut c, &mut env, t2), ports[0]);
    }

    #[test]
    fn clove_int_counts_the_flows_own_rate_on_a_path_it_would_move_to() {
        let never = |_: u64| -> u64 { panic!("no tie to break") };
        // a flow alone on path 0 fills it (report 1.0, its own share 1.0);
        // path 1's aged report says 0.5: moving would make path 1 1.5 -> stay
        assert_eq!(int_pick(&[1.0, 0.5], &[1.0, 1.0], Some(0), 3, never), 0);
        // the same reports for a flow with a tenth of the path: it moves
        assert_eq!(int_pick(&[1.0, 0.5], &[0.1, 0.1], Some(0), 3, never), 1);
        // two flows sharing path 0 (0.5 each), path 1 idle: 0 + 0.5 < 1.0 -> move
        assert_eq!(int_pick(&[1.0, 0.0], &[0.5, 0.5], Some(0), 3, never), 1);
        // a new flow (no current path) takes the least-utilised path
        assert_eq!(int_pick(&[0.6, 0.3, 0.9], &[0.0; 3], None, 3, never), 1);
        // equal after quantisation (3 bits: 0.80 and 0.76 are both level 6):
        // the current path is kept ...
        assert_eq!(int_pick(&[0.80, 0.76], &[0.0, 0.0], Some(0), 3, never), 0);
        // ... and among other equal paths the draw decides
        assert_eq!(int_pick(&[0.9, 0.2, 0.2], &[0.0; 3], Some(0), 3, |n| n - 1), 2);
        assert_eq!(int_pick(&[0.9, 0.2, 0.2], &[0.0; 3], Some(0), 3, |_| 0), 1);
    }

    #[test]
    fn receiver_relays_ce_on_reverse_packets_at_most_once_per_interval() {
        let mut env = Env::testbed();
        let mut c = clove(&env, false);
        let (h0, h20) = (env.topo.host(0), env.topo.host(20));
        let now = SimTime::from_us(10);
        // a CE-marked data packet from host 0 arrives at host 20 on port 4242
        let d = env.packet(0, 20, 1500);
        {
            let p = env.pkts.get_mut(d.0);
            p.set_outer_sport(4242);
            set_clove_header(p, None);
            p.ce = true;
        }
        c.on_host_receive(&mut env.ctx(now), h20, d);
        let d2 = env.same_flow(d);
        c.on_host_receive(&mut env.ctx(now), h20, d2);
        // the next packet host 20 sends to host 0 carries (4242, CE), once
        let r1 = env.packet(20, 0, 52);
        c.on_host_send(&mut env.ctx(now), h20, r1);
        assert!(matches!(env.pkts.get(r1.0).lb, LbHeader::Clove { fb_valid: true, fb_port: 4242, fb_ce: true, .. }));
        let r2 = env.packet(20, 0, 52);
        c.on_host_send(&mut env.ctx(now), h20, r2);
        assert!(matches!(env.pkts.get(r2.0).lb, LbHeader::Clove { fb_valid: false, .. }));
        // an unmarked packet a relay interval later: relayed too, with ecnSet clear
        let later = now + SimTime::from_us_f64(c.resolved.iter().find(|r| r.0 == "relay_interval_us").unwrap().1);
        let d3 = env.same_flow(d);
        {
            let p = env.pkts.get_mut(d3.0);
            set_clove_header(p, None);
            p.ce = false;
        }
        c.on_host_receive(&mut env.ctx(later), h20, d3);
        let r3 = env.packet(20, 0, 52);
        c.on_host_send(&mut env.ctx(later), h20, r3);
        assert!(matches!(env.pkts.get(r3.0).lb, LbHeader::Clove { fb_valid: true, fb_port: 4242, fb_ce: false, .. }));
        let _ = h0;
    }

    #[test]
    fn ecn_cuts_a_third_and_spreads_it_over_uncongested_paths() {
        let now = SimTime::from_us(100);
        let mut w = vec![0.25; 4];
        let mut cong = vec![SimTime::ZERO; 4];
        apply_ecn_cut(&mut w, &cong, 1, 1.0 / 3.0, now);
        let third = 0.25 / 3.0;
        assert!((w[1] - (0.25 - third)).abs() < 1e-12);
        for j in [0, 2, 3] {
            assert!((w[j] - (0.25 + third / 3.0)).abs() < 1e-12);
        }
        // path 2 is congested: a cut of path 0 goes to paths 1 and 3 only
        cong[2] = now + SimTime::from_us(10);
        let before = w.clone();
        apply_ecn_cut(&mut w, &cong, 0, 1.0 / 3.0, now);
        let d = before[0] / 3.0;
        assert!((w[2] - before[2]).abs() < 1e-12);
        assert!((w[1] - (before[1] + d / 2.0)).abs() < 1e-12);
        assert!((w[3] - (before[3] + d / 2.0)).abs() < 1e-12);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12, "weights stay a distribution");
    }
}
