//! Hermes (Zhang et al., SIGCOMM 2017): resilient load balancing at the
//! sending host's edge, over unmodified switches, steering by the outer
//! source port of the encapsulation (as Clove; the paths are found by the
//! same traceroute discovery, `edge.rs`).
//!
//! **Sensing.** Per (source host, destination host) and path:
//! - RTT: the sender edge reads each ACK's timestamp echo (RFC 7323) and
//!   charges now − ts_ecr to the path the acknowledged data was sent on;
//!   the minimum per aging period T1 is the path's RTT (the previous
//!   period's minimum while the current one has none);
//! - ECN fraction: the sender edge sets ECT on the outer header; the
//!   receiving edge keeps a moving average (gain 1/16) of CE per
//!   (source, path) and relays (path, fraction) on reverse packets with
//!   Clove's relay (at most once per half RTT per path, `edge.rs`);
//! - loss: a data segment sent again (sequence below the flow's highest)
//!   marks its path lossy for the current and next aging period;
//! - active probes: every `probe_us`, for each pair with traffic, the edge
//!   probes the path it currently rates best and `probe_paths` random others
//!   (a 64-byte request answered by the receiving edge), giving RTT and one
//!   CE sample on paths no flow uses.
//!
//! **Path types** (§3.1 of the Hermes paper as we recall it, not checked
//! against its text; docs/schemes/ag.md §2.3): *good* if RTT < T_RTT_low, ECN
//! fraction < T_ECN and no loss; *bad* (congested) if RTT ≥ T_RTT_high and
//! ECN fraction ≥ T_ECN, or lossy with either; otherwise (or with no RTT
//! sample yet) *gray*. Failure detection (blackholes, random drops) is not
//! modelled.
//!
//! **Decisions.** A new flow takes the good path carrying fewest flows
//! (random among ties), else the gray one with fewest flows, else any.
//! An existing flow is rerouted (timely yet cautious) only when its path is
//! bad, it has sent at least S bytes, its sending rate is below R of its
//! host link, at least `reroute_gap_us` passed since its last attempt, and a
//! coin with `change_probability` says so: to a good path, else to a path
//! notably better (RTT lower by Δ_RTT and ECN fraction lower by Δ_ECN).
//! AG's configuration: S = 600 KB, R = 30 % (AG §VI-B). Every other
//! threshold is expressed in the stated RTT (`rtt_us`), scaled from the
//! authors' ns-3 defaults for their 10G fabric (our choice, docs/schemes/ag.md §2.3):
//! T_RTT_low = RTT + 20 µs, T_RTT_high = 1.5 RTT but at least
//! RTT + 2 × 20 µs (on a 10G fabric with an 11 µs idle RTT, 1.5 RTT would
//! sit below T_RTT_low); the resolved values are in `scheme.resolved`.
//!
//! **What the host transport sees.** Hermes reads ECN beside the host's
//! transport, not instead of it. The paper's text past its abstract was
//! not at hand to check; its authors' public ns-3 code (the simulator of
//! the paper's large-scale runs, where Hermes is "TLB") hands the ECN-Echo
//! of each ACK to both Hermes and the TCP congestion control
//! (`TcpSocketBase::ReceivedAck`), so a DCTCP host reacts to every mark.
//! That is the default, `guest_sees_ce = true`: CE goes on to the receiving
//! host's transport. `guest_sees_ce = false` is the other reading, a
//! hypervisor that hides underlay ECN from its VMs as Clove-ECN's does
//! (Clove §4): the receiving edge clears CE, and a DCTCP guest never
//! reduces its window on marks.
//!
//! *Our choices:* state per destination host (the paper aggregates per
//! destination ToR); a flow counts on a path while it sent within the last
//! 10 aging periods (the edge sees no FIN); ACK-only flows are placed by
//! the same rule and never rerouted (they send no bytes).

use crate::dre::{Dre, DreParams};
use crate::edge::{hashed_port, set_clove_header, token_kind, Discovery, IdMap, PathUse, Relay};
use crate::edge_params::{self, num, RTT};
use crate::params::{DefaultValue, ParamDef, ParamError, Params, GUEST_SEES_CE};
use crate::SchemeEnv;
use lbsim_engine::SimTime;
use lbsim_net::{packet::tuple_hash, Ctx, HostRx, LbHeader, LoadBalancer, NodeId, Packet, Payload, PktId, Proto, ENCAP_DPORT};

pub const PARAMS: &[ParamDef] = crate::with_discovery![
    num("rtt_low_above_us", "us", 20.0, "T_RTT_low = RTT + this: a path below it (ECN low, no loss) is good"),
    num(
        "rtt_high_rtts",
        "RTT",
        1.5,
        "T_RTT_high = this x RTT, but at least T_RTT_low + rtt_low_above_us: a path at or above it with ECN fraction >= T_ECN is bad"
    ),
    num("ecn_threshold", "fraction", 0.4, "T_ECN: ECN-marked fraction separating good from congested paths"),
    num("rtt_delta_rtts", "RTT", 0.1, "Delta_RTT: a notably better path has an RTT lower by at least this"),
    num("ecn_delta", "fraction", 0.05, "Delta_ECN: ... and an ECN fraction lower by at least this"),
    num("aging_rtts", "RTT", 4.0, "T1: path RTT minima and loss flags are kept per period of this length"),
    num("size_threshold_bytes", "bytes", 600000.0, "S: only flows that sent at least this much are rerouted (AG: 600 KB)"),
    num("rate_threshold", "fraction of host link", 0.3, "R: only flows sending slower than this are rerouted (AG: 30 % of link capacity)"),
    num("change_probability", "probability", 0.5, "chance that an eligible flow is rerouted at an attempt (herd avoidance)"),
    num("reroute_gap_us", "us", 100.0, "minimum time between two reroute attempts of a flow (authors' ns-3 code)"),
    num("rate_tau_rtts", "RTT", 2.0, "time constant of a flow's sending-rate estimate"),
    num("probe_us", "us", 500.0, "active probing period per (source, destination) pair with traffic"),
    num("probe_paths", "paths", 2.0, "random paths probed each period besides the best one"),
    ParamDef {
        name: GUEST_SEES_CE,
        unit: "",
        default: DefaultValue::Bool(true),
        help: "true (default, as the authors' ns-3 code, where the TCP and Hermes read the same ECN-Echo): CE reaches the receiving host's transport, so DCTCP reacts to marks; false: the receiving edge clears CE, the hosts never see underlay ECN (a hypervisor as Clove-ECN's, the other reading)",
    },
    RTT,
];

/// Timer token kind of the probing round (above discovery's kinds).
const TOKEN_PROBE_TICK: u64 = 8 << 56;
/// Control tags of Hermes probes: discovery's tags stay below 2^18.
const TAG_HERMES: u32 = 1 << 29;
const TAG_REPLY: u32 = 1 << 30;
const TAG_CE: u32 = 1 << 31;
const PROBE_RING: usize = 1 << 20;

/// What Hermes makes of a path (§3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathType {
    Good,
    Gray,
    Bad,
}

/// The thresholds paths are typed with, resolved to time units.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub rtt_low: SimTime,
    pub rtt_high: SimTime,
    pub ecn: f64,
    pub rtt_delta: SimTime,
    pub ecn_delta: f64,
}

/// What the edge knows about one path now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathView {
    pub rtt: Option<SimTime>,
    pub ecn: f64,
    pub lossy: bool,
    pub flows: u32,
}

/// Types a path from its signals.
pub fn classify(v: &PathView, th: &Thresholds) -> PathType {
    let slow = v.rtt.is_some_and(|r| r >= th.rtt_high);
    let marked = v.ecn >= th.ecn;
    if (slow && marked) || (v.lossy && (slow || marked)) {
        PathType::Bad
    } else if v.rtt.is_some_and(|r| r < th.rtt_low) && !marked && !v.lossy {
        PathType::Good
    } else {
        PathType::Gray
    }
}

/// Path for a new flow: the good path with fewest flows, else the gray one
/// with fewest flows, else the bad one with fewest flows; ties at random
/// (`below(n)` draws from 0..n).
pub fn place_new(paths: &[PathView], th: &Thresholds, mut below: impl FnMut(u64) -> u64) -> usize {
    for want in [PathType::Good, PathType::Gray, PathType::Bad] {
        let c: Vec<usize> = (0..paths.len()).filter(|&i| classify(&paths[i], th) == want).collect();
        if let Some(min) = c.iter().map(|&i| paths[i].flows).min() {
            let ties: Vec<usize> = c.into_iter().filter(|&i| paths[i].flows == min).collect();
            return ties[below(ties.len() as u64) as usize];
        }
    }
    0
}

/// Where an existing flow on path `cur` goes (None: it stays). Eligible
/// only if its path is bad, it sent at least `s` bytes and its rate is
/// below `r` (bits/s); then a good path (fewest flows), else the notably
/// better path with the lowest RTT. The caller draws the coin.
pub fn reroute_target(paths: &[PathView], cur: usize, sent: u64, rate_bps: f64, s: u64, r: f64, th: &Thresholds) -> Option<usize> {
    if classify(&paths[cur], th) != PathType::Bad || sent < s || rate_bps >= r {
        return None;
    }
    let good = (0..paths.len()).filter(|&i| i != cur && classify(&paths[i], th) == PathType::Good).min_by_key(|&i| paths[i].flows);
    if good.is_some() {
        return good;
    }
    let c = &paths[cur];
    (0..paths.len())
        .filter(|&i| i != cur)
        .filter(|&i| {
            let p = &paths[i];
            let rtt_better = match (p.rtt, c.rtt) {
                (Some(a), Some(b)) => a + th.rtt_delta <= b,
                _ => false,
            };
            rtt_better && p.ecn + th.ecn_delta <= c.ecn && classify(p, th) != PathType::Bad
        })
        .min_by_key(|&i| paths[i].rtt)
}

#[derive(Clone, Copy, Debug)]
struct PathStat {
    /// Minimum RTT sample in aging period `period`, and in the one before.
    rtt_cur: SimTime,
    rtt_prev: SimTime,
    period: u64,
    ecn: f64,
    ecn_at: SimTime,
    /// Aging period of the last retransmission on this path (+1; 0 = none).
    retx_period1: u64,
}

impl Default for PathStat {
    fn default() -> Self {
        PathStat { rtt_cur: SimTime::MAX, rtt_prev: SimTime::MAX, period: 0, ecn: 0.0, ecn_at: SimTime::ZERO, retx_period1: 0 }
    }
}

impl PathStat {
    fn roll(&mut self, period: u64) {
        if period > self.period {
            self.rtt_prev = if period == self.period + 1 { self.rtt_cur } else { SimTime::MAX };
            self.rtt_cur = SimTime::MAX;
            self.period = period;
        }
    }
    fn rtt_sample(&mut self, period: u64, rtt: SimTime) {
        self.roll(period);
        self.rtt_cur = self.rtt_cur.min(rtt);
    }
}

#[derive(Clone, Debug, Default)]
struct Dest {
    epoch: u32,
    stats: Vec<PathStat>,
    /// Flows (keys into the source's flow map) placed toward this destination.
    members: Vec<u64>,
    /// Data sent since the last probing round.
    active: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    dst: u32,
    epoch: u32,
    /// Path index in the destination's path set, and its port.
    path: usize,
    port: u16,
    /// The port before the last move, and when the move happened (an ACK
    /// echoing an earlier timestamp is about the old path).
    prev_port: u16,
    moved_at: SimTime,
    sent: u64,
    high_seq: u64,
    rate: Dre,
    last: SimTime,
    last_attempt: SimTime,
}

pub struct Hermes {
    disc: Discovery,
    relay: Relay,
    th: Thresholds,
    t1: SimTime,
    s: u64,
    r_frac: f64,
    p_change: f64,
    reroute_gap: SimTime,
    probe_every: SimTime,
    probe_paths: usize,
    rate_p: DreParams,
    dests: Vec<IdMap<u32, Dest>>,
    flows: Vec<IdMap<u64, Flow>>,
    /// Receiver side: CE moving average per (receiver, source host, port).
    ce_avg: Vec<IdMap<u64, f64>>,
    /// CE goes on to the receiving host's transport.
    guest_sees_ce: bool,
    active_pairs: Vec<(u32, u32)>,
    /// Probe ring: (src, dst, path, epoch, sent at).
    probes: Vec<(u32, u32, u16, u32, SimTime)>,
    probe_seq: u64,
    pub resolved: Vec<(&'static str, f64)>,
    pub path_use: PathUse,
    pub placed: [u64; 3],
    pub reroute_attempts: u64,
    pub reroutes: u64,
    pub probes_sent: u64,
    pub rtt_samples: u64,
}

impl Hermes {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Hermes, ParamError> {
        let rtt = edge_params::rtt(p, env.base_rtt)?;
        let in_rtts = |k: &str| p.in_rtts(k, rtt);
        let frac = |k: &str| -> Result<f64, ParamError> {
            let x = p.non_negative(k)?;
            if x > 1.0 {
                return Err(ParamError { key: k.into(), msg: format!("must be from 0 to 1, got {}", lbsim_engine::fmt_num(x)) });
            }
            Ok(x)
        };
        let rtt_low = rtt + p.duration("rtt_low_above_us", true)?;
        // at least the low margin again above T_RTT_low: on a fabric whose
        // RTT is small next to the margin, 1.5 RTT would fall below T_RTT_low
        let rtt_high = in_rtts("rtt_high_rtts")?.max(rtt_low + (rtt_low - rtt));
        let th = Thresholds { rtt_low, rtt_high, ecn: frac("ecn_threshold")?, rtt_delta: in_rtts("rtt_delta_rtts")?, ecn_delta: frac("ecn_delta")? };
        let t1 = in_rtts("aging_rtts")?;
        let tau = in_rtts("rate_tau_rtts")?;
        let period = SimTime((tau.0 / 32).max(1));
        let hosts = env.topo.num_hosts();
        let probe_every = p.duration("probe_us", false)?;
        let relay = Relay::new(SimTime((rtt.0 / 2).max(1)), hosts);
        Ok(Hermes {
            disc: Discovery::new(edge_params::discovery(p)?, hosts),
            relay,
            th,
            t1,
            s: p.non_negative("size_threshold_bytes")? as u64,
            r_frac: frac("rate_threshold")?,
            p_change: frac("change_probability")?,
            reroute_gap: p.duration("reroute_gap_us", true)?,
            probe_every,
            probe_paths: p.non_negative("probe_paths")?.round() as usize,
            rate_p: DreParams { t_dre: period, alpha: period.0 as f64 / tau.0 as f64, q_bits: 8 },
            dests: (0..hosts).map(|_| IdMap::default()).collect(),
            flows: (0..hosts).map(|_| IdMap::default()).collect(),
            ce_avg: (0..hosts).map(|_| IdMap::default()).collect(),
            guest_sees_ce: p.boolean(GUEST_SEES_CE)?,
            active_pairs: vec![],
            probes: vec![],
            probe_seq: 0,
            resolved: vec![
                ("rtt_us", rtt.as_us_f64()),
                ("rtt_low_us", th.rtt_low.as_us_f64()),
                ("rtt_high_us", th.rtt_high.as_us_f64()),
                ("rtt_delta_us", th.rtt_delta.as_us_f64()),
                ("aging_us", t1.as_us_f64()),
                ("rate_tau_us", tau.as_us_f64()),
            ],
            path_use: PathUse::new(env.topo),
            placed: [0; 3],
            reroute_attempts: 0,
            reroutes: 0,
            probes_sent: 0,
            rtt_samples: 0,
        })
    }

    pub fn discovery(&self) -> &Discovery {
        &self.disc
    }

    fn period(&self, now: SimTime) -> u64 {
        now.0 / self.t1.0.max(1)
    }

    /// The destination's state, reset when its path set changed.
    fn dest(&mut self, src: u32, dst: u32, n: usize, epoch: u32) -> &mut Dest {
        let d = self.dests[src as usize].entry(dst).or_default();
        if d.epoch != epoch || d.stats.len() != n {
            d.epoch = epoch;
            d.stats = vec![PathStat::default(); n];
        }
        d
    }

    /// What the edge knows about each path toward `dst` now (flow counts:
    /// flows that sent within the last 10 aging periods; older ones are
    /// forgotten).
    fn views(&mut self, src: u32, dst: u32, now: SimTime) -> Vec<PathView> {
        let period = self.period(now);
        let horizon = SimTime(self.t1.0.saturating_mul(10));
        let flows = &mut self.flows[src as usize];
        let Some(d) = self.dests[src as usize].get_mut(&dst) else { return vec![] };
        let mut count = vec![0u32; d.stats.len()];
        d.members.retain(|k| match flows.get(k) {
            Some(f) if now - f.last <= horizon => {
                if f.epoch == d.epoch && f.path < count.len() {
                    count[f.path] += 1;
                }
                true
            }
            Some(_) => {
                flows.remove(k);
                false
            }
            None => false,
        });
        let fresh = SimTime(self.t1.0.saturating_mul(2));
        d.stats
            .iter_mut()
            .zip(count)
            .map(|(s, flows)| {
                s.roll(period);
                let rtt = if s.rtt_cur != SimTime::MAX { Some(s.rtt_cur) } else { (s.rtt_prev != SimTime::MAX).then_some(s.rtt_prev) };
                PathView { rtt, ecn: if now - s.ecn_at <= fresh { s.ecn } else { 0.0 }, lossy: s.retx_period1 >= period.max(1), flows }
            })
            .collect()
    }

    /// Path statistics of the path `port` toward `dst`, if it is current.
    fn stat_of(&mut self, src: u32, dst: u32, port: u16) -> Option<&mut PathStat> {
        let set = self.disc.get(src, dst)?;
        let i = set.ports.iter().position(|&p| p == port)?;
        let (n, epoch) = (set.ports.len(), set.epoch);
        self.dest(src, dst, n, epoch).stats.get_mut(i)
    }

    fn send_probe(&mut self, ctx: &mut Ctx, src: u32, dst: u32, path: usize, port: u16, epoch: u32) {
        let id = (self.probe_seq % PROBE_RING as u64) as usize;
        self.probe_seq += 1;
        let e = (src, dst, path as u16, epoch, ctx.now);
        if id < self.probes.len() {
            self.probes[id] = e;
        } else {
            self.probes.push(e);
        }
        let (s, t) = (ctx.topo.host(src), ctx.topo.host(dst));
        let mut p = Packet::new(s, t, port, ENCAP_DPORT, Proto::Udp, 64, Payload::Control { tag: TAG_HERMES | id as u32 }, ctx.now);
        p.set_outer_sport(port);
        p.ect = true;
        let pkt = ctx.new_packet(p);
        ctx.send_from_host(s, pkt);
        self.probes_sent += 1;
    }

    /// A probing round: for each pair with traffic since the last round,
    /// the best-rated path and `probe_paths` random others.
    fn probe_round(&mut self, ctx: &mut Ctx) {
        let pairs = std::mem::take(&mut self.active_pairs);
        for &(src, dst) in &pairs {
            let Some(set) = self.disc.get(src, dst) else { continue };
            if set.ports.is_empty() {
                continue;
            }
            let (ports, epoch) = (set.ports.clone(), set.epoch);
            // the path set may have changed since the pair's last packet
            // (rediscovery): its per-path state follows the set first
            self.dest(src, dst, ports.len(), epoch);
            let views = self.views(src, dst, ctx.now);
            if let Some(d) = self.dests[src as usize].get_mut(&dst) {
                d.active = false;
            }
            let th = self.th;
            let rank = |v: &PathView| (classify(v, &th) as u8, v.rtt.unwrap_or(SimTime::MAX));
            let best = (0..views.len()).min_by_key(|&i| rank(&views[i])).unwrap_or(0);
            let mut chosen = vec![best];
            // `probe_paths` distinct others, uniformly (a partial Fisher-Yates)
            let mut others: Vec<usize> = (0..ports.len()).filter(|&i| i != best).collect();
            for k in 0..self.probe_paths.min(others.len()) {
                let j = k + ctx.rng.below((others.len() - k) as u64) as usize;
                others.swap(k, j);
                chosen.push(others[k]);
            }
            for i in chosen {
                self.send_probe(ctx, src, dst, i, ports[i], epoch);
            }
        }
        ctx.schedule(ctx.now + self.probe_every, TOKEN_PROBE_TICK);
    }
}

impl LoadBalancer for Hermes {
    /// Host-side only: switches forward by plain ECMP.
    fn wants_switch_hook(&self) -> bool {
        false
    }
    fn start(&mut self, ctx: &mut Ctx) {
        ctx.schedule(self.probe_every, TOKEN_PROBE_TICK);
    }

    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        let p = *ctx.pkt(pkt);
        if matches!(p.payload, Payload::Control { .. }) {
            return;
        }
        let now = ctx.now;
        let (src, dst) = (ctx.topo.host_index(host), ctx.topo.host_index(p.dst));
        let set = self.disc.paths(ctx, src, dst);
        let (ports, epoch) = (set.ports.clone(), set.epoch);
        let key = p.inner_hash();
        let data = p.tcp().map_or(p.is_data(), |h| h.len > 0);
        let port = if ports.is_empty() {
            hashed_port(&p)
        } else {
            self.dest(src, dst, ports.len(), epoch);
            let known = self.flows[src as usize].get(&key).is_some_and(|f| f.epoch == epoch && f.dst == dst);
            if !known {
                // a new flow (or one whose paths were remapped)
                let views = self.views(src, dst, now);
                let i = place_new(&views, &self.th, |n| ctx.rng.below(n));
                self.placed[classify(&views[i], &self.th) as usize] += 1;
                let f = self.flows[src as usize].entry(key).or_default();
                *f = Flow { dst, epoch, path: i, port: ports[i], prev_port: ports[i], moved_at: now, last: now, last_attempt: now, ..Default::default() };
                self.dests[src as usize].get_mut(&dst).unwrap().members.push(key);
                if data {
                    self.path_use.record(ctx.topo, &self.disc.get(src, dst).unwrap().paths[i], true, 0);
                }
            } else if data {
                // touched first, so the pruning in `views` keeps it
                self.flows[src as usize].get_mut(&key).unwrap().last = now;
                let f = self.flows[src as usize][&key];
                if now - f.last_attempt >= self.reroute_gap && f.sent >= self.s {
                    let views = self.views(src, dst, now);
                    let mut est = f.rate;
                    let rate = est.value(&self.rate_p, now) * 8.0 / self.rate_p.tau().as_secs_f64();
                    let cap = ctx.ports[ctx.topo.nic(host).idx()].rate.0 as f64;
                    if let Some(to) = reroute_target(&views, f.path, f.sent, rate, self.s, self.r_frac * cap, &self.th) {
                        self.reroute_attempts += 1;
                        let f = self.flows[src as usize].get_mut(&key).unwrap();
                        f.last_attempt = now;
                        if ctx.rng.f64() < self.p_change {
                            self.reroutes += 1;
                            f.prev_port = f.port;
                            f.moved_at = now;
                            f.path = to;
                            f.port = ports[to];
                            self.path_use.record(ctx.topo, &self.disc.get(src, dst).unwrap().paths[to], true, 0);
                        }
                    }
                }
            }
            self.flows[src as usize][&key].port
        };
        if let Some(f) = self.flows[src as usize].get_mut(&key) {
            f.last = now;
            if let (true, Some(h)) = (data, p.tcp()) {
                let end = h.seq + h.len as u64;
                if end <= f.high_seq {
                    // sent again: its path lost something
                    let (path, epoch_f) = (f.path, f.epoch);
                    let period = now.0 / self.t1.0.max(1);
                    if let Some(d) = self.dests[src as usize].get_mut(&dst) {
                        if d.epoch == epoch_f {
                            if let Some(s) = d.stats.get_mut(path) {
                                s.retx_period1 = period + 1;
                            }
                        }
                    }
                } else {
                    f.high_seq = end;
                }
                f.sent += h.len as u64;
                f.rate.add(&self.rate_p, now, p.size as u64);
            }
            if data {
                if let Some(set) = self.disc.get(src, dst) {
                    if let Some(path) = set.paths.get(f.path).filter(|_| f.epoch == set.epoch) {
                        self.path_use.record(ctx.topo, path, false, p.size as u64);
                    }
                }
                if let Some(d) = self.dests[src as usize].get_mut(&dst) {
                    if !d.active {
                        d.active = true;
                        self.active_pairs.push((src, dst));
                    }
                }
            }
        }
        let fb = self.relay.take(src, dst, now);
        let pm = ctx.pkt_mut(pkt);
        pm.set_outer_sport(port);
        set_clove_header(pm, fb);
        pm.ect = true;
    }

    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        let p = *ctx.pkt(pkt);
        let now = ctx.now;
        if let Payload::Control { tag } = p.payload {
            if tag & TAG_HERMES != 0 {
                if tag & TAG_REPLY == 0 {
                    // a probe request: answer on the same outer port
                    let ce = if p.ce { TAG_CE } else { 0 };
                    let mut r = Packet::new(host, p.src, p.sport, ENCAP_DPORT, Proto::Udp, 64, Payload::Control { tag: tag | TAG_REPLY | ce }, now);
                    r.set_outer_sport(p.outer_sport.unwrap_or(p.sport));
                    let id = ctx.new_packet(r);
                    ctx.send_from_host(host, id);
                } else {
                    let id = (tag & (PROBE_RING as u32 - 1)) as usize;
                    if let Some(&(src, dst, path, epoch, sent)) = self.probes.get(id) {
                        let period = self.period(now);
                        let ce = tag & TAG_CE != 0;
                        if let Some(d) = self.dests[src as usize].get_mut(&dst).filter(|d| d.epoch == epoch) {
                            if let Some(s) = d.stats.get_mut(path as usize) {
                                s.rtt_sample(period, now - sent);
                                s.ecn = 0.75 * s.ecn + 0.25 * ce as u8 as f64;
                                s.ecn_at = now;
                                self.rtt_samples += 1;
                            }
                        }
                    }
                }
                return HostRx::Consume;
            }
        }
        if self.disc.on_receive(ctx, pkt) {
            return HostRx::Consume;
        }
        let LbHeader::Clove { fb_valid, fb_port, fb_util, .. } = p.lb else { return HostRx::Deliver };
        let (me, peer) = (ctx.topo.host_index(host), ctx.topo.host_index(p.src));
        // 1. a relayed ECN fraction about my path toward `peer`
        if fb_valid {
            if let Some(s) = self.stat_of(me, peer, fb_port) {
                s.ecn = fb_util as f64 / 1000.0;
                s.ecn_at = now;
            }
        }
        // 2. the ECN fraction on the path this packet took, to relay back
        if let Some(port) = p.outer_sport {
            let a = self.ce_avg[me as usize].entry(((peer as u64) << 16) | port as u64).or_insert(0.0);
            *a += (p.ce as u8 as f64 - *a) / 16.0;
            let v = (*a * 1000.0).round() as u16;
            self.relay.observe(me, peer, port, p.ce, v, now);
        }
        // 3. an ACK for my data: an RTT sample for the path the data took
        if let Payload::Tcp { to_receiver: false, hdr, .. } = p.payload {
            if hdr.ts_ecr > SimTime::ZERO && hdr.ts_ecr <= now {
                let fwd = tuple_hash(host, p.src, p.dport, p.sport, p.proto);
                if let Some(f) = self.flows[me as usize].get(&fwd) {
                    let port = if hdr.ts_ecr >= f.moved_at { f.port } else { f.prev_port };
                    let period = self.period(now);
                    if let Some(s) = self.stat_of(me, peer, port) {
                        s.rtt_sample(period, now - hdr.ts_ecr);
                        self.rtt_samples += 1;
                    }
                }
            }
        }
        // 4. the transport sees CE unless the edge hides it
        let pm = ctx.pkt_mut(pkt);
        pm.lb = LbHeader::None;
        if !self.guest_sees_ce {
            pm.ce = false;
        }
        HostRx::Deliver
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        if token_kind(token) == TOKEN_PROBE_TICK {
            self.probe_round(ctx);
        } else {
            self.disc.on_timer(ctx, token);
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("flows_placed_on_good", self.placed[0] as f64),
            ("flows_placed_on_gray", self.placed[1] as f64),
            ("flows_placed_on_bad", self.placed[2] as f64),
            ("reroute_attempts", self.reroute_attempts as f64),
            ("reroutes", self.reroutes as f64),
            ("path_probes", self.probes_sent as f64),
            ("rtt_samples", self.rtt_samples as f64),
        ];
        v.extend(self.discovery().stats());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn th() -> Thresholds {
        // RTT 100 us: low 120, high 150, delta 10
        Thresholds { rtt_low: SimTime::from_us(120), rtt_high: SimTime::from_us(150), ecn: 0.4, rtt_delta: SimTime::from_us(10), ecn_delta: 0.05 }
    }

    fn v(rtt_us: Option<u64>, ecn: f64, lossy: bool, flows: u32) -> PathView {
        PathView { rtt: rtt_us.map(SimTime::from_us), ecn, lossy, flows }
    }

    #[test]
    fn paths_are_typed_by_rtt_ecn_and_loss() {
        let t = th();
        assert_eq!(classify(&v(Some(110), 0.1, false, 0), &t), PathType::Good);
        assert_eq!(classify(&v(Some(120), 0.1, false, 0), &t), PathType::Gray, "RTT at T_RTT_low is not good");
        assert_eq!(classify(&v(Some(110), 0.4, false, 0), &t), PathType::Gray, "ECN at T_ECN is not good");
        assert_eq!(classify(&v(Some(110), 0.0, true, 0), &t), PathType::Gray, "a lossy path is not good");
        assert_eq!(classify(&v(None, 0.0, false, 0), &t), PathType::Gray, "no RTT yet: gray");
        assert_eq!(classify(&v(Some(150), 0.4, false, 0), &t), PathType::Bad);
        assert_eq!(classify(&v(Some(200), 0.1, false, 0), &t), PathType::Gray, "slow but unmarked: gray");
        assert_eq!(classify(&v(Some(100), 0.9, false, 0), &t), PathType::Gray, "marked but fast: gray");
        assert_eq!(classify(&v(Some(200), 0.1, true, 0), &t), PathType::Bad, "slow and lossy");
        assert_eq!(classify(&v(Some(100), 0.5, true, 0), &t), PathType::Bad, "marked and lossy");
    }

    #[test]
    fn new_flows_go_to_the_good_path_with_fewest_flows() {
        let t = th();
        let paths = [v(Some(110), 0.0, false, 3), v(Some(200), 0.5, false, 0), v(Some(115), 0.1, false, 1), v(None, 0.0, false, 0)];
        for _ in 0..10 {
            assert_eq!(place_new(&paths, &t, |n| n - 1), 2);
        }
        // no good path: the gray one with fewest flows
        let paths = [v(Some(200), 0.5, false, 0), v(None, 0.0, false, 2), v(Some(130), 0.0, false, 1)];
        assert_eq!(place_new(&paths, &t, |_| 0), 2);
    }

    #[test]
    fn only_a_large_slow_flow_on_a_bad_path_is_rerouted() {
        let t = th();
        let (s, r) = (600_000, 3e9);
        let paths = [v(Some(300), 0.8, false, 4), v(Some(110), 0.0, false, 2), v(Some(140), 0.2, false, 0)];
        assert_eq!(reroute_target(&paths, 0, 1_000_000, 1e9, s, r, &t), Some(1), "bad path, large, slow: to the good one");
        assert_eq!(reroute_target(&paths, 0, 599_999, 1e9, s, r, &t), None, "below S");
        assert_eq!(reroute_target(&paths, 0, 1_000_000, 3e9, s, r, &t), None, "not slower than R");
        assert_eq!(reroute_target(&paths, 1, 1_000_000, 1e9, s, r, &t), None, "its path is good");
        assert_eq!(reroute_target(&paths, 2, 1_000_000, 1e9, s, r, &t), None, "its path is gray");
        // no good path: a notably better one (lower RTT by Delta and ECN by Delta)
        let paths = [v(Some(300), 0.8, false, 4), v(Some(295), 0.1, false, 0), v(Some(200), 0.78, false, 0), v(Some(250), 0.3, false, 0)];
        assert_eq!(reroute_target(&paths, 0, 1_000_000, 1e9, s, r, &t), Some(3));
        let paths = [v(Some(300), 0.8, false, 4), v(Some(295), 0.1, false, 0)];
        assert_eq!(reroute_target(&paths, 0, 1_000_000, 1e9, s, r, &t), None, "5 us better is not notably better");
    }

    #[test]
    fn ce_reaches_the_guest_unless_hidden_and_the_fraction_is_relayed_back() {
        use crate::testutil::Env;
        use lbsim_tcp::TcpHeader;
        for hide in [false, true] {
            let mut env = Env::testbed();
            let mut g = std::collections::BTreeMap::new();
            if hide {
                g.insert(GUEST_SEES_CE.to_string(), crate::Value::Bool(false));
            }
            let mut h = Hermes::new(&Params::new(&g, PARAMS, "hermes").unwrap(), &env.scheme_env()).unwrap();
            let (a, b) = (env.topo.host(0), env.topo.host(16));
            let now = SimTime::from_us(10);
            // a CE-marked data segment from host 0 arrives at host 16
            let mut p = Packet::new(
                a,
                b,
                1000,
                80,
                Proto::Tcp,
                1500,
                Payload::Tcp { conn: 0, to_receiver: true, hdr: TcpHeader { len: 1448, ..Default::default() } },
                now,
            );
            p.set_outer_sport(50_000);
            set_clove_header(&mut p, None);
            p.ect = true;
            p.ce = true;
            let id = env.ctx(now).new_packet(p);
            assert_eq!(h.on_host_receive(&mut env.ctx(now), b, id), HostRx::Deliver);
            assert_eq!(env.pkts.get(id.0).ce, !hide, "CE reaches the guest unless guest_sees_ce = false");
            assert_eq!(env.pkts.get(id.0).lb, LbHeader::None);
            // either way the receiving edge's next packet to host 0 carries (port 50000, 1/16)
            assert_eq!(h.relay.take(16, 0, now), Some((50_000, true, 63)));
        }
    }

    #[test]
    fn a_probing_round_follows_a_shrunken_path_set_and_probes_distinct_paths() {
        use crate::edge::PathSet;
        use crate::testutil::Env;
        let mut env = Env::testbed();
        let g = std::collections::BTreeMap::new();
        let mut h = Hermes::new(&Params::new(&g, PARAMS, "hermes").unwrap(), &env.scheme_env()).unwrap();
        let now = SimTime::from_us(10);
        let set = |n: u16, epoch| PathSet { ports: (0..n).map(|i| 50_000 + i).collect(), paths: vec![vec![]; n as usize], epoch };
        // four paths known, the last one rated best
        h.disc.set_paths(0, 16, set(4, 1));
        h.dest(0, 16, 4, 1).stats[3].rtt_sample(0, SimTime::from_us(50));
        // a rediscovery finds two: the round must probe within those two
        h.disc.set_paths(0, 16, set(2, 2));
        h.active_pairs.push((0, 16));
        h.probe_round(&mut env.ctx(now));
        let sent: Vec<u16> = h.probes.iter().map(|e| e.2).collect();
        assert_eq!(sent.len(), 2, "best + probe_paths others, capped by the set");
        assert!(sent.iter().all(|&p| p < 2), "{sent:?}");
        assert_ne!(sent[0], sent[1], "distinct paths");
        // with 8 paths and probe_paths = 2, three distinct paths every round
        h.disc.set_paths(0, 16, set(8, 3));
        for _ in 0..200 {
            h.probes.clear();
            h.active_pairs.push((0, 16));
            h.probe_round(&mut env.ctx(now));
            let mut p: Vec<u16> = h.probes.iter().map(|e| e.2).collect();
            p.sort();
            p.dedup();
            assert_eq!(p.len(), 3, "{p:?}");
        }
    }

    #[test]
    fn rtt_minima_age_by_period() {
        let mut s = PathStat::default();
        s.rtt_sample(3, SimTime::from_us(50));
        s.rtt_sample(3, SimTime::from_us(40));
        s.rtt_sample(4, SimTime::from_us(90));
        assert_eq!((s.rtt_cur, s.rtt_prev), (SimTime::from_us(90), SimTime::from_us(40)));
        s.roll(6);
        assert_eq!((s.rtt_cur, s.rtt_prev), (SimTime::MAX, SimTime::MAX), "a gap of a whole period forgets both");
    }
}
