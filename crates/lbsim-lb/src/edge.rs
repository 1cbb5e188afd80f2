//! Host-edge machinery shared by the hypervisor schemes (Clove, Edge-Flowlet,
//! Presto): encapsulation source ports, path discovery, per-flow flowlet
//! tracking and the receiver's feedback relay.
//!
//! **Path discovery** (Clove §3.1). For each destination host the source
//! edge probes `probe_ports` random outer source ports with TTL 1..`max_ttl`
//! (traceroute, Paris-style: the outer 5-tuple is fixed per probe, so ECMP
//! sends every TTL down the same path). Each switch where the TTL expires
//! returns an ICMP time-exceeded naming itself and the port the probe came
//! in on; the sequence of ingress ports is the path. After `probe_wait_us`
//! the edge keeps one port per distinct path and picks `paths` of them
//! greedily, each time adding the path sharing the fewest links with those
//! already picked (§3.1). Probes are real packets, paced over the first half
//! of the collection window. Discovery starts on the first packet to a
//! destination (the edge uses the hashed port meanwhile) and repeats every
//! `probe_period_ms` while the destination has traffic, so a topology change
//! (which remaps ECMP hashes) is picked up at the next round. Each round
//! probes the ports in use first, so a path that did not change keeps its
//! port and the set keeps its epoch; schemes reset their per-path state only
//! when the mapping really changes (§3.1 allows keeping it across a remap;
//! we do not). Traces shorter than the longest one are discarded (lost
//! replies). `discovery = "oracle"` reads the same mapping from the routing
//! state instantly (an idealisation, reported in the summary).

use lbsim_engine::{mix64, SimTime};
use lbsim_net::{ecmp_pick, Ctx, LbHeader, NodeId, Packet, Payload, PktId, PortId, Proto, Tier, Topology, ENCAP_DPORT};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for keys that are already well-mixed 64-bit hashes.
#[derive(Default)]
pub struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("IdHasher takes u64 / u32 keys only")
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = mix64(x as u64);
    }
}
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The outer source port an unmodified overlay uses: a hash of the inner 5-tuple.
pub fn hashed_port(pkt: &Packet) -> u16 {
    49152 + (mix64(pkt.inner_hash()) % 16384) as u16
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscoveryMode {
    Probe,
    Oracle,
}

#[derive(Clone, Copy, Debug)]
pub struct DiscoveryParams {
    pub mode: DiscoveryMode,
    pub paths: usize,
    pub probe_ports: usize,
    pub max_ttl: u8,
    pub period: SimTime,
    pub wait: SimTime,
}

/// The ports an edge uses toward one destination.
#[derive(Clone, Debug, Default)]
pub struct PathSet {
    /// Chosen outer source ports, one per distinct path (empty: not yet known).
    pub ports: Vec<u16>,
    /// The path (ingress ports, hop by hop) each chosen port maps to.
    pub paths: Vec<Vec<PortId>>,
    /// Incremented each time the mapping is replaced.
    pub epoch: u32,
}

#[derive(Clone, Debug, Default)]
struct Round {
    /// probe port -> hops[ttl-1] = ingress port where that TTL expired
    hops: Vec<(u16, Vec<Option<PortId>>)>,
    /// probe ports whose TTL series has been sent
    sent: usize,
}

#[derive(Clone, Debug, Default)]
struct Dest {
    set: PathSet,
    probing: Option<Round>,
    /// traffic seen since the last round started
    active: bool,
    scheduled: bool,
    /// no traffic for a whole period: rounds paused until traffic returns
    dormant: bool,
}

/// Probe bookkeeping for every (source host, destination host).
pub struct Discovery {
    pub p: DiscoveryParams,
    /// [src host][dst host]
    dests: Vec<IdMap<u32, Dest>>,
    /// probe tag -> (src host, dst host, index in round, ttl): a ring of
    /// `PROBE_RING` entries (replies come back within milliseconds, long
    /// before a tag is reused)
    probes: Vec<(u32, u32, u16, u8)>,
    probe_seq: u64,
    /// Path-set epochs are global and only grow, so state keyed on an old
    /// mapping is never mistaken for the current one.
    next_epoch: u32,
    pub probes_sent: u64,
    pub rounds: u64,
}

const PROBE_RING: u64 = 1 << 18;

/// Timer tokens used by discovery: the top byte says what kind.
pub const TOKEN_PROBE_DONE: u64 = 1 << 56;
pub const TOKEN_PROBE_ROUND: u64 = 2 << 56;
pub const TOKEN_PROBE_SEND: u64 = 4 << 56;

fn token(kind: u64, src: u32, dst: u32) -> u64 {
    kind | ((src as u64) << 24) | dst as u64
}
pub fn token_kind(t: u64) -> u64 {
    t & (0xFF << 56)
}
fn token_hosts(t: u64) -> (u32, u32) {
    (((t >> 24) & 0xFF_FFFF) as u32, (t & 0xFF_FFFF) as u32)
}

impl Discovery {
    pub fn new(p: DiscoveryParams, hosts: usize) -> Self {
        Discovery { p, dests: (0..hosts).map(|_| IdMap::default()).collect(), probes: vec![], probe_seq: 0, next_epoch: 1, probes_sent: 0, rounds: 0 }
    }

    /// Probes sent and discovery rounds, for the stats of the schemes that
    /// discover paths.
    pub fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("probe_packets", self.probes_sent as f64), ("discovery_rounds", self.rounds as f64)]
    }

    /// The path set toward `dst` from `src` (host indices); starts discovery
    /// if this destination is new. Empty `ports` until discovery completes.
    pub fn paths(&mut self, ctx: &mut Ctx, src: u32, dst: u32) -> &PathSet {
        let fresh = !self.dests[src as usize].contains_key(&dst);
        if fresh {
            self.dests[src as usize].insert(dst, Dest::default());
        }
        let dormant = self.dests[src as usize][&dst].dormant;
        if fresh || dormant {
            self.dests[src as usize].get_mut(&dst).unwrap().dormant = false;
            match self.p.mode {
                DiscoveryMode::Oracle => {
                    self.refresh_oracle(ctx, src, dst);
                    self.schedule_round(ctx, src, dst);
                }
                DiscoveryMode::Probe => self.start_round(ctx, src, dst),
            }
        }
        let d = self.dests[src as usize].get_mut(&dst).unwrap();
        d.active = true;
        &d.set
    }

    /// Replaces the path set if the mapping changed; true if it did.
    fn install(&mut self, src: u32, dst: u32, set: PathSet) -> bool {
        let d = self.dests[src as usize].get_mut(&dst).unwrap();
        if set.ports == d.set.ports && set.paths == d.set.paths {
            return false;
        }
        d.set = PathSet { epoch: self.next_epoch, ..set };
        self.next_epoch += 1;
        true
    }

    fn refresh_oracle(&mut self, ctx: &mut Ctx, src: u32, dst: u32) -> bool {
        let old = self.dests[src as usize][&dst].set.ports.clone();
        let set = oracle_paths(ctx, src, dst, &self.p, &old);
        self.install(src, dst, set)
    }

    /// Every destination `src` has a path set for, in host order.
    pub fn path_sets(&self, src: u32) -> Vec<(u32, &PathSet)> {
        let mut v: Vec<(u32, &PathSet)> = self.dests[src as usize].iter().map(|(d, x)| (*d, &x.set)).collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// The current path set (no side effects).
    /// Replaces the path set of a pair (tests: a rediscovery's outcome).
    #[cfg(test)]
    pub(crate) fn set_paths(&mut self, src: u32, dst: u32, set: PathSet) {
        self.dests[src as usize].entry(dst).or_default().set = set;
    }

    pub fn get(&self, src: u32, dst: u32) -> Option<&PathSet> {
        self.dests[src as usize].get(&dst).map(|d| &d.set)
    }

    fn schedule_round(&mut self, ctx: &mut Ctx, src: u32, dst: u32) {
        let d = self.dests[src as usize].get_mut(&dst).unwrap();
        if !d.scheduled {
            d.scheduled = true;
            d.active = false;
            // stagger rounds a little so all hosts do not probe at once
            let jitter = SimTime(ctx.rng.below(self.p.period.0 / 8 + 1));
            ctx.schedule(ctx.now + self.p.period + jitter, token(TOKEN_PROBE_ROUND, src, dst));
        }
    }

    /// Starts a round: probe ports are drawn now and their TTL series are
    /// paced over the first half of the collection window (a burst of
    /// hundreds of probes would itself congest the host's queue).
    fn start_round(&mut self, ctx: &mut Ctx, src: u32, dst: u32) {
        self.rounds += 1;
        let mut round = Round::default();
        // the ports in use are probed first, so an unchanged path keeps its port
        let current = self.dests[src as usize][&dst].set.ports.clone();
        for i in 0..self.p.probe_ports.max(current.len()) {
            let port = current.get(i).copied().unwrap_or_else(|| 1024 + ctx.rng.below(64_000) as u16);
            round.hops.push((port, vec![None; self.p.max_ttl as usize]));
        }
        let d = self.dests[src as usize].get_mut(&dst).unwrap();
        d.probing = Some(round);
        self.send_probe_series(ctx, src, dst);
        ctx.schedule(ctx.now + self.p.wait, token(TOKEN_PROBE_DONE, src, dst));
    }

    /// Sends the TTL 1..max_ttl probes of the next probe port of the round.
    fn send_probe_series(&mut self, ctx: &mut Ctx, src: u32, dst: u32) {
        let Some(Dest { probing: Some(r), .. }) = self.dests[src as usize].get_mut(&dst) else { return };
        if r.sent >= r.hops.len() {
            return;
        }
        let i = r.sent;
        r.sent += 1;
        let (port, more) = (r.hops[i].0, r.sent < r.hops.len());
        let (s, t) = (ctx.topo.host(src), ctx.topo.host(dst));
        for ttl in 1..=self.p.max_ttl {
            let tag = (self.probe_seq % PROBE_RING) as u32;
            self.probe_seq += 1;
            if (tag as usize) < self.probes.len() {
                self.probes[tag as usize] = (src, dst, i as u16, ttl);
            } else {
                self.probes.push((src, dst, i as u16, ttl));
            }
            let mut p = Packet::new(s, t, port, ENCAP_DPORT, Proto::Udp, 64, Payload::Control { tag }, ctx.now);
            p.set_outer_sport(port);
            p.ttl = ttl;
            let id = ctx.new_packet(p);
            ctx.send_from_host(s, id);
            self.probes_sent += 1;
        }
        if more {
            let spacing = SimTime(self.p.wait.0 / (2 * self.p.probe_ports as u64).max(1));
            ctx.schedule(ctx.now + spacing, token(TOKEN_PROBE_SEND, src, dst));
        }
    }

    /// Handles a packet arriving at a host that belongs to discovery (probe
    /// replies and probes that reached their destination). Returns true if
    /// the packet was a discovery packet (the caller consumes it).
    pub fn on_receive(&mut self, ctx: &Ctx, pkt: PktId) -> bool {
        match ctx.pkt(pkt).payload {
            Payload::TimeExceeded { tag, in_port, .. } => {
                if let Some(&(src, dst, i, ttl)) = self.probes.get(tag as usize) {
                    if let Some(Dest { probing: Some(r), .. }) = self.dests[src as usize].get_mut(&dst) {
                        if let Some(h) = r.hops.get_mut(i as usize) {
                            h.1[ttl as usize - 1] = Some(in_port);
                        }
                    }
                }
                true
            }
            Payload::Control { .. } => true,
            _ => false,
        }
    }

    /// Handles discovery timers; returns the (src, dst) whose path set changed.
    pub fn on_timer(&mut self, ctx: &mut Ctx, t: u64) -> Option<(u32, u32)> {
        let (src, dst) = token_hosts(t);
        match token_kind(t) {
            TOKEN_PROBE_SEND => {
                self.send_probe_series(ctx, src, dst);
                None
            }
            TOKEN_PROBE_DONE => {
                let d = self.dests[src as usize].get_mut(&dst)?;
                let round = d.probing.take()?;
                let set = select(round, &self.p);
                let changed = !set.ports.is_empty() && self.install(src, dst, set);
                self.schedule_round(ctx, src, dst);
                changed.then_some((src, dst))
            }
            TOKEN_PROBE_ROUND => {
                let d = self.dests[src as usize].get_mut(&dst)?;
                d.scheduled = false;
                if !d.active {
                    // idle destination: no more rounds until traffic returns
                    d.dormant = true;
                    return None;
                }
                match self.p.mode {
                    DiscoveryMode::Probe => self.start_round(ctx, src, dst),
                    DiscoveryMode::Oracle => {
                        let changed = self.refresh_oracle(ctx, src, dst);
                        self.schedule_round(ctx, src, dst);
                        return changed.then_some((src, dst));
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// One port per distinct path, then a greedy pick of `paths` of them by fewest
/// shared links (Clove §3.1). Incomplete traces (lost replies) are dropped.
fn select(round: Round, p: &DiscoveryParams) -> PathSet {
    let mut by_path: Vec<(Vec<PortId>, u16)> = vec![];
    for (port, hops) in round.hops {
        // the trace up to the first missing hop; the destination host sends
        // no reply, so the last switch's reply ends a complete trace
        let path: Vec<PortId> = hops.iter().map_while(|h| *h).collect();
        if path.is_empty() {
            continue;
        }
        if !by_path.iter().any(|(q, _)| *q == path) {
            by_path.push((path, port));
        }
    }
    // keep only the longest traces (shorter ones lost replies deeper in)
    let longest = by_path.iter().map(|(q, _)| q.len()).max().unwrap_or(0);
    by_path.retain(|(q, _)| q.len() == longest);
    greedy(by_path, p.paths)
}

fn greedy(mut cands: Vec<(Vec<PortId>, u16)>, k: usize) -> PathSet {
    cands.sort();
    let mut chosen: Vec<(Vec<PortId>, u16)> = vec![];
    while chosen.len() < k && !cands.is_empty() {
        let shared = |q: &Vec<PortId>| -> usize { chosen.iter().map(|(c, _)| q.iter().filter(|l| c.contains(l)).count()).sum() };
        let (i, _) = cands.iter().enumerate().min_by_key(|(i, (q, _))| (shared(q), *i)).unwrap();
        chosen.push(cands.remove(i));
    }
    // keep a stable order: by path
    chosen.sort();
    PathSet { ports: chosen.iter().map(|c| c.1).collect(), paths: chosen.into_iter().map(|c| c.0).collect(), epoch: 0 }
}

/// The mapping read from routing state: for the current ports and then
/// random ones (`probe_ports` in all), the ECMP choice of every switch on the way.
fn oracle_paths(ctx: &mut Ctx, src: u32, dst: u32, p: &DiscoveryParams, current: &[u16]) -> PathSet {
    let topo: &Topology = ctx.topo;
    let (s, t) = (topo.host(src), topo.host(dst));
    let mut cands: Vec<(Vec<PortId>, u16)> = vec![];
    for i in 0..p.probe_ports.max(current.len()) {
        let port = current.get(i).copied().unwrap_or_else(|| 1024 + ctx.rng.below(64_000) as u16);
        let mut probe = Packet::new(s, t, port, ENCAP_DPORT, Proto::Udp, 64, Payload::Control { tag: 0 }, ctx.now);
        probe.set_outer_sport(port);
        let mut node: NodeId = topo.leaf_of_host(s);
        let mut path = vec![topo.ports[topo.nic(s).idx()].peer];
        for _ in 0..64 {
            let c = ctx.routing.next_hops_from(node, *path.last().unwrap(), dst);
            if c.is_empty() {
                break;
            }
            let out = ecmp_pick(ctx.salts[node.idx()], probe.hash, c);
            let in_port = topo.ports[out.idx()].peer;
            node = topo.ports[in_port.idx()].node;
            if node == t {
                break;
            }
            path.push(in_port);
        }
        if !cands.iter().any(|(q, _)| *q == path) {
            cands.push((path, port));
        }
    }
    greedy(cands, p.paths)
}

/// Per-flow flowlet state at a sending edge.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowletState {
    pub last: SimTime,
    pub port: u16,
    pub id: u32,
    pub epoch: u32,
    pub started: bool,
}

/// Per-flow flowlet detection: a new flowlet when the flow was idle for
/// more than `gap` (or when the destination's path set changed).
pub struct Flowlets {
    pub gap: SimTime,
    flows: Vec<IdMap<u64, FlowletState>>,
    pub count: u64,
}

impl Flowlets {
    pub fn new(gap: SimTime, hosts: usize) -> Self {
        Flowlets { gap, flows: (0..hosts).map(|_| IdMap::default()).collect(), count: 0 }
    }

    /// Returns the flow's state and whether this packet starts a new flowlet.
    pub fn touch(&mut self, host: u32, flow: u64, now: SimTime, epoch: u32) -> (&mut FlowletState, bool) {
        let f = self.flows[host as usize].entry(flow).or_default();
        let new = !f.started || now - f.last > self.gap || f.epoch != epoch;
        if new {
            f.id = f.id.wrapping_add(1);
            f.started = true;
            f.epoch = epoch;
            self.count += 1;
        }
        f.last = now;
        (f, new)
    }
}

/// A pending path report: (port, ce, util, seen at).
type Report = (u16, bool, u16, SimTime);

/// Receiver-side relay of path feedback (Clove §3.2, §4): per (remote
/// source host, outer port) the last value seen and when it was last
/// relayed; one pending report per reverse packet, at most once per
/// `interval` per path.
pub struct Relay {
    pub interval: SimTime,
    /// [receiver host] -> (source host -> pending (port, ce, util, seen at) reports)
    pending: Vec<IdMap<u32, Vec<Report>>>,
    /// [receiver host] -> ((source host, port) -> last relay time)
    last: Vec<HashMap<(u32, u16), SimTime>>,
    pub relayed: u64,
}

impl Relay {
    pub fn new(interval: SimTime, hosts: usize) -> Self {
        Relay { interval, pending: (0..hosts).map(|_| IdMap::default()).collect(), last: (0..hosts).map(|_| HashMap::new()).collect(), relayed: 0 }
    }

    /// Notes a value for path `port` from `src` seen at `rcv`; queues a
    /// report unless one for this path went out within `interval`.
    pub fn observe(&mut self, rcv: u32, src: u32, port: u16, ce: bool, util: u16, now: SimTime) {
        let last = self.last[rcv as usize].entry((src, port)).or_insert(SimTime::ZERO);
        let q = self.pending[rcv as usize].entry(src).or_default();
        if let Some(e) = q.iter_mut().find(|e| e.0 == port) {
            // a report is already waiting: keep the latest value (CE sticks)
            e.1 |= ce;
            e.2 = util;
            e.3 = now;
            return;
        }
        if *last != SimTime::ZERO && now - *last < self.interval {
            return;
        }
        q.push((port, ce, util, now));
    }

    /// The report to piggyback on a packet from `rcv` to `src`, if any.
    /// Reports older than 10 relay intervals (no reverse packet came to
    /// carry them) are dropped as stale — our choice.
    pub fn take(&mut self, rcv: u32, src: u32, now: SimTime) -> Option<(u16, bool, u16)> {
        let q = self.pending[rcv as usize].get_mut(&src)?;
        let horizon = SimTime(self.interval.0.saturating_mul(10));
        q.retain(|e| now - e.3 <= horizon);
        if q.is_empty() {
            return None;
        }
        let r = q.remove(0);
        self.last[rcv as usize].insert((src, r.0), now);
        self.relayed += 1;
        Some((r.0, r.1, r.2))
    }
}

/// Writes (or updates) the Clove overlay header of a packet.
pub fn set_clove_header(pkt: &mut Packet, fb: Option<(u16, bool, u16)>) {
    let (fb_valid, fb_port, fb_ce, fb_util) = match fb {
        Some((p, c, u)) => (true, p, c, u),
        None => (false, 0, false, 0),
    };
    pkt.lb = LbHeader::Clove { fb_valid, fb_port, fb_ce, fb_util, int_util: 0 };
}

/// Smooth weighted round robin (as in nginx): deterministic, interleaves
/// choices in proportion to the weights.
#[derive(Clone, Debug, Default)]
pub struct Wrr {
    current: Vec<f64>,
}

impl Wrr {
    pub fn pick(&mut self, weights: &[f64]) -> usize {
        if self.current.len() != weights.len() {
            self.current = vec![0.0; weights.len()];
        }
        let total: f64 = weights.iter().sum();
        let mut best = 0;
        for (i, w) in weights.iter().enumerate() {
            self.current[i] += w;
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= total;
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flowlets_split_on_idle_gaps_only() {
        let mut f = Flowlets::new(SimTime::from_us(50), 1);
        let t = |us| SimTime::from_us(us);
        assert!(f.touch(0, 9, t(0), 0).1, "first packet starts a flowlet");
        assert!(!f.touch(0, 9, t(40), 0).1, "40 us gap < 50 us");
        assert!(!f.touch(0, 9, t(90), 0).1, "gaps are measured from the last packet");
        assert!(f.touch(0, 9, t(141), 0).1, "51 us gap: new flowlet");
        assert!(f.touch(0, 7, t(141), 0).1, "another flow has its own state: its first packet starts a flowlet");
        assert!(f.touch(0, 9, t(142), 1).1, "a new path set starts a new flowlet");
        assert_eq!(f.count, 4);
    }

    #[test]
    fn wrr_follows_the_weights() {
        let mut w = Wrr::default();
        let weights = [0.33, 0.33, 0.17, 0.17];
        let mut n = [0; 4];
        for _ in 0..10_000 {
            n[w.pick(&weights)] += 1;
        }
        for i in 0..4 {
            assert!((n[i] as f64 / 10_000.0 - weights[i] / 1.0).abs() < 0.005, "{n:?}");
        }
    }

    #[test]
    fn relay_limits_reports_per_path_and_interval() {
        let mut r = Relay::new(SimTime::from_us(10), 2);
        r.observe(1, 0, 5000, true, 0, SimTime::from_us(1));
        r.observe(1, 0, 5000, false, 0, SimTime::from_us(2)); // merged into the waiting report
        r.observe(1, 0, 6000, true, 0, SimTime::from_us(2));
        assert_eq!(r.take(1, 0, SimTime::from_us(3)), Some((5000, true, 0)));
        assert_eq!(r.take(1, 0, SimTime::from_us(3)), Some((6000, true, 0)));
        assert_eq!(r.take(1, 0, SimTime::from_us(3)), None);
        // within the interval: nothing queued
        r.observe(1, 0, 5000, true, 0, SimTime::from_us(8));
        assert_eq!(r.take(1, 0, SimTime::from_us(8)), None);
        // after it: reported again
        r.observe(1, 0, 5000, true, 0, SimTime::from_us(14));
        assert_eq!(r.take(1, 0, SimTime::from_us(14)), Some((5000, true, 0)));
    }

    #[test]
    fn greedy_prefers_disjoint_paths() {
        let p = |v: &[u32]| v.iter().map(|&x| PortId(x)).collect::<Vec<_>>();
        // four paths: a-b, a-c, d-e, d-f (a and d are first hops)
        let cands = vec![(p(&[1, 2]), 10), (p(&[1, 3]), 11), (p(&[4, 5]), 12), (p(&[4, 6]), 13)];
        let s = greedy(cands, 2);
        // the two picked share no link
        assert!(s.paths[0].iter().all(|l| !s.paths[1].contains(l)), "{:?}", s.paths);
    }
}

/// Where an edge scheme sent its data, per switch of the fabric's middle
/// tiers (spines, aggregation, cores): flowlets started on a path through
/// the switch, data bytes sent on such paths, and (Clove-ECN) the WRR
/// weight those paths held, summed over flowlet decisions. Observability
/// for the question "does the scheme move traffic off a degraded path".
#[derive(Clone, Debug, Default)]
pub struct PathUse {
    pub flowlets: Vec<u64>,
    pub bytes: Vec<u64>,
    pub weight_sum: Vec<f64>,
    pub decisions: u64,
    mid: Vec<bool>,
}

impl PathUse {
    pub fn new(topo: &Topology) -> Self {
        let n = topo.nodes.len();
        PathUse {
            flowlets: vec![0; n],
            bytes: vec![0; n],
            weight_sum: vec![0.0; n],
            decisions: 0,
            mid: topo.nodes.iter().map(|x| matches!(x.tier, Tier::Spine | Tier::Core)).collect(),
        }
    }

    /// The middle-tier switches on `path` (ingress ports hop by hop).
    #[inline]
    fn mids<'a>(mid: &'a [bool], topo: &'a Topology, path: &'a [PortId]) -> impl Iterator<Item = usize> + 'a {
        path.iter().map(|p| topo.ports[p.idx()].node.idx()).filter(|&n| mid[n])
    }

    /// A data packet of `bytes` sent on `path`, the first of a new flowlet
    /// if `new_flowlet`.
    #[inline]
    pub fn record(&mut self, topo: &Topology, path: &[PortId], new_flowlet: bool, bytes: u64) {
        for n in Self::mids(&self.mid, topo, path) {
            self.flowlets[n] += new_flowlet as u64;
            self.bytes[n] += bytes;
        }
    }

    /// A weighted choice among `paths` with `weights` was made.
    pub fn record_weights(&mut self, topo: &Topology, paths: &[Vec<PortId>], weights: &[f64]) {
        self.decisions += 1;
        for (path, &w) in paths.iter().zip(weights) {
            for n in Self::mids(&self.mid, topo, path) {
                self.weight_sum[n] += w;
            }
        }
    }

    /// Per middle-tier switch that carried anything: (node, flowlets,
    /// bytes, mean weight or None).
    pub fn rows(&self) -> Vec<(NodeId, u64, u64, Option<f64>)> {
        (0..self.mid.len())
            .filter(|&n| self.mid[n])
            .map(|n| (NodeId(n as u32), self.flowlets[n], self.bytes[n], (self.decisions > 0).then(|| self.weight_sum[n] / self.decisions as f64)))
            .collect()
    }
}
