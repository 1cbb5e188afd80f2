//! HULA (Katta et al., SOSR 2016, §3–4): hop-by-hop utilisation-aware
//! flowlet load balancing. Instead of every leaf tracking every path,
//! each switch keeps, per destination ToR, only the best next hop and the
//! utilisation of the best path through it, learnt from probes.
//!
//! - Probes: every ToR originates a probe (its id, path utilisation 0)
//!   every `probe_us` on each of its fabric ports. Probes are real packets
//!   of `probe_bytes` that switches address to their neighbour
//!   ([`Packet::to_switch`]); they queue and cost wire time like data.
//! - Utilisation: each switch egress port keeps U ← bytes + U·(1 − Δt/τ)
//!   per packet (τ = `tau_probes` probe periods; HULA: twice the probe
//!   period), read as U / (C·τ).
//! - A switch receiving ToR t's probe on port p computes
//!   u = max(probe util, U of its own egress p) (p carries data toward t).
//!   It adopts (p, u) as best hop for t when u is lower than the entry's, p
//!   is the entry's hop already (a refresh, so a path getting worse is
//!   seen), or the entry is older than `keepalive_us` (its path stopped
//!   sending probes: failed). The HULA SIGCOMM'17 tutorial and public P4
//!   programs keep the same three rules.
//! - Replication without loops: a probe from below goes out of every other
//!   fabric port (up and down), a probe from above (or from a switch of the
//!   same tier) only down. Our choice: a switch forwards a probe only when
//!   it changed or refreshed its entry, carrying the entry's utilisation
//!   (distance-vector semantics: each switch advertises its best path),
//!   which bounds the probe count in a 3-tier fabric.
//! - Data: a flowlet table at every switch (exact gap `flowlet_us`); a new
//!   flowlet takes the best hop to its destination ToR, or ECMP while the
//!   switch has none (or the best hop is not a route any more).
//!
//! Sources and defaults: docs/schemes/ag.md §2.2. AG sets a 500 µs
//! flowlet gap and a 200 µs probe period; τ = 2·T_p, keep-alive 1 ms and
//! 64-byte probes are our choices from public HULA implementations.

use crate::flowlet::{FlowletMode, FlowletTable, Lookup};
use crate::params::{num, DefaultValue, ParamDef, ParamError, Params};
use crate::SchemeEnv;
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, LbHeader, LoadBalancer, NodeId, Packet, PktId, PortId, PortPlace, ReportTable, ReportValue, Topology};

pub const PARAMS: &[ParamDef] = &[
    num("probe_us", "us", 200.0, "probe period T_p: every ToR sends a probe on each fabric port this often (AG §VI-B: 200 us)"),
    num("tau_probes", "probe periods", 2.0, "utilisation estimator time constant tau, in probe periods (HULA: 2)"),
    num(
        "keepalive_us",
        "us",
        1000.0,
        "a best-hop entry not refreshed for this long accepts any probe (path failure detection; our choice from public HULA code)",
    ),
    num("flowlet_us", "us", 500.0, "flowlet gap (AG §VI-B: 500 us)"),
    ParamDef {
        name: "flowlet_mode",
        unit: "",
        default: DefaultValue::Str("exact"),
        help: "\"exact\": a gap longer than flowlet_us ends a flowlet; \"age_bit\": CONGA's table (gaps of T..2T)",
    },
    num("flowlet_table_size", "entries", 65536.0, "flowlet table entries per switch"),
    num("probe_bytes", "bytes", 64.0, "probe size on the wire (our choice: a minimum Ethernet frame)"),
];

const NO_HOP: u32 = u32::MAX;
/// Utilisation fixed point: 4096 = 100 % of a port's capacity.
const UNIT: f64 = 4096.0;

/// Bytes per (switch, destination leaf) (for the memory check before a run).
pub const BEST_HOP_BYTES: usize = std::mem::size_of::<Best>();

#[derive(Clone, Copy, Debug)]
struct Best {
    hop: u32,
    util: u16,
    at: SimTime,
}

#[derive(Clone, Copy, Debug, Default)]
struct Util {
    bytes: f64,
    last: SimTime,
}

pub struct Hula {
    t_p: SimTime,
    tau: SimTime,
    keepalive: SimTime,
    t_fl: SimTime,
    mode: FlowletMode,
    table_size: usize,
    probe_bytes: u32,
    racks: usize,
    tor_nodes: Vec<NodeId>,
    /// Per port: the utilisation estimator of its egress.
    util: Vec<Util>,
    /// (node × rack) → best hop toward that rack's ToR.
    best: Vec<Best>,
    flowlets: Vec<Option<FlowletTable>>,
    pub probes_sent: u64,
    pub probe_bytes_sent: u64,
    pub best_hop_changes: u64,
    pub flowlets_started: u64,
    /// New flowlets that had no usable best hop (ECMP instead).
    pub flowlets_without_best: u64,
}

impl Hula {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Hula, ParamError> {
        let topo = env.topo;
        let t_p = p.duration("probe_us", false)?;
        let tp = p.positive("tau_probes")?;
        let tau = SimTime::input_us(t_p.as_us_f64() * tp, true).map_err(|m| ParamError { key: "tau_probes".into(), msg: m })?;
        let probe_bytes = p.count("probe_bytes", 9000)?;
        if probe_bytes < 20 {
            return Err(ParamError { key: "probe_bytes".into(), msg: format!("must be at least 20 (an IP header), got {probe_bytes}") });
        }
        if topo.racks.len() > u16::MAX as usize {
            return Err(ParamError { key: "scheme".into(), msg: format!("hula: probes carry a 16-bit ToR id; this fabric has {} ToRs", topo.racks.len()) });
        }
        if let Some((from, to)) = unreachable_tor(topo) {
            return Err(ParamError {
                key: "scheme".into(),
                msg: format!(
                    "hula: probes from ToR {} cannot reach ToR {} (they go up, then down; this fabric has no such path)",
                    topo.nodes[from.idx()].name,
                    topo.nodes[to.idx()].name
                ),
            });
        }
        let n = topo.nodes.len();
        Ok(Hula {
            t_p,
            tau,
            keepalive: p.duration("keepalive_us", false)?,
            t_fl: p.duration("flowlet_us", false)?,
            mode: FlowletMode::param(p)?,
            table_size: p.count("flowlet_table_size", 1 << 24)? as usize,
            probe_bytes: probe_bytes as u32,
            racks: topo.racks.len(),
            tor_nodes: topo.racks.clone(),
            util: vec![Util::default(); topo.ports.len()],
            best: vec![Best { hop: NO_HOP, util: u16::MAX, at: SimTime::ZERO }; n * topo.racks.len()],
            flowlets: vec![None; n],
            probes_sent: 0,
            probe_bytes_sent: 0,
            best_hop_changes: 0,
            flowlets_started: 0,
            flowlets_without_best: 0,
        })
    }

    /// Utilisation of `port`'s egress at `now`, in 1/4096 of its capacity.
    fn port_util(&self, ctx: &Ctx, port: PortId) -> u16 {
        let u = self.util[port.idx()];
        let decay = 1.0 - (ctx.now - u.last).as_secs_f64() / self.tau.as_secs_f64();
        let cap = ctx.topo.ports[port.idx()].rate.0 as f64 / 8.0 * self.tau.as_secs_f64();
        ((u.bytes * decay.max(0.0) / cap) * UNIT).round().min(u16::MAX as f64) as u16
    }

    /// Best hop of `node` toward ToR `rack` and its path utilisation (1/4096).
    pub fn best_hop(&self, node: NodeId, rack: u32) -> Option<(PortId, u16)> {
        let b = self.best[node.idx() * self.racks + rack as usize];
        (b.hop != NO_HOP).then_some((PortId(b.hop), b.util))
    }

    /// Every ToR's best hops (ToR, destination rack, hop, utilisation).
    pub fn tor_best_hops(&self) -> Vec<(NodeId, u32, PortId, f64)> {
        let mut v = vec![];
        for (r, &tor) in self.tor_nodes.iter().enumerate() {
            for d in 0..self.racks as u32 {
                if let (true, Some((hop, u))) = (d as usize != r, self.best_hop(tor, d)) {
                    v.push((tor, d, hop, u as f64 / UNIT));
                }
            }
        }
        v
    }

    fn send_probe(&mut self, ctx: &mut Ctx, sw: NodeId, port: PortId, tor: u16, util: u16) {
        if !ctx.ports[port.idx()].up {
            return;
        }
        let to = ctx.topo.ports[ctx.topo.ports[port.idx()].peer.idx()].node;
        let pkt = ctx.new_packet(Packet::to_switch(sw, to, self.probe_bytes, 0, LbHeader::Hula { tor, util }, ctx.now));
        ctx.send_from_switch(sw, pkt, Some(port));
        self.probes_sent += 1;
        self.probe_bytes_sent += self.probe_bytes as u64;
    }
}

/// Whether `port` leads down: its far end reaches it by an uplink.
fn leads_down(topo: &Topology, port: PortId) -> bool {
    topo.is_uplink(topo.ports[port.idx()].peer)
}

/// The first (origin, ToR) pair that probes following HULA's replication
/// rules (up from below, only down from above) can never connect.
fn unreachable_tor(topo: &Topology) -> Option<(NodeId, NodeId)> {
    let n = topo.nodes.len();
    let mut seen = vec![[false; 2]; n];
    let mut stack = vec![];
    for &origin in &topo.racks {
        seen.iter_mut().for_each(|s| *s = [false; 2]);
        for &p in &topo.nodes[origin.idx()].ports {
            if topo.port_place(p) == PortPlace::Fabric {
                stack.push(p); // a probe on the wire of egress p
            }
        }
        while let Some(p) = stack.pop() {
            let in_port = topo.ports[p.idx()].peer;
            let sw = topo.ports[in_port.idx()].node;
            let from_below = topo.is_uplink(p);
            if std::mem::replace(&mut seen[sw.idx()][from_below as usize], true) || sw == origin {
                continue;
            }
            for &q in &topo.nodes[sw.idx()].ports {
                if q != in_port && topo.port_place(q) == PortPlace::Fabric && (from_below || leads_down(topo, q)) {
                    stack.push(q);
                }
            }
        }
        if let Some(&t) = topo.racks.iter().find(|&&t| t != origin && !seen[t.idx()][0] && !seen[t.idx()][1]) {
            return Some((origin, t));
        }
    }
    None
}

impl LoadBalancer for Hula {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn start(&mut self, ctx: &mut Ctx) {
        ctx.schedule(SimTime::ZERO, 0);
    }

    fn on_timer(&mut self, ctx: &mut Ctx, _token: u64) {
        for (rack, &tor) in ctx.topo.racks.iter().enumerate() {
            for &p in &ctx.topo.nodes[tor.idx()].ports {
                if ctx.topo.port_place(p) == PortPlace::Fabric {
                    self.send_probe(ctx, tor, p, rack as u16, 0);
                }
            }
        }
        ctx.schedule(ctx.now + self.t_p, 0);
    }

    fn on_switch_control(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId) -> Forward {
        let LbHeader::Hula { tor, util } = ctx.pkt(pkt).lb else {
            return Forward::Consume;
        };
        if ctx.topo.racks[tor as usize] == sw {
            return Forward::Consume; // back at its origin
        }
        let u = util.max(self.port_util(ctx, in_port));
        let i = sw.idx() * self.racks + tor as usize;
        let b = self.best[i];
        if !(b.hop == NO_HOP || u < b.util || b.hop == in_port.0 || ctx.now - b.at > self.keepalive) {
            return Forward::Consume;
        }
        if b.hop != in_port.0 {
            self.best_hop_changes += 1;
        }
        self.best[i] = Best { hop: in_port.0, util: u, at: ctx.now };
        let from_below = ctx.topo.is_uplink(ctx.topo.ports[in_port.idx()].peer);
        let n_ports = ctx.topo.nodes[sw.idx()].ports.len();
        for k in 0..n_ports {
            let q = ctx.topo.nodes[sw.idx()].ports[k];
            if q != in_port && ctx.topo.port_place(q) == PortPlace::Fabric && (from_below || leads_down(ctx.topo, q)) {
                self.send_probe(ctx, sw, q, tor, u);
            }
        }
        Forward::Consume
    }

    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in: PortId, pkt: PktId, c: &[PortId]) -> Forward {
        if c.len() == 1 {
            return Forward::Port(c[0]);
        }
        let (hash, dst) = {
            let p = ctx.pkt(pkt);
            (p.hash, p.dst)
        };
        let (size, t_fl, mode) = (self.table_size, self.t_fl, self.mode);
        let table = self.flowlets[sw.idx()].get_or_insert_with(|| FlowletTable::with_mode(size, t_fl, mode));
        if let Lookup::Active(p) = table.lookup(hash, ctx.now) {
            if c.contains(&p) {
                return Forward::Port(p);
            }
        }
        self.flowlets_started += 1;
        let rack = ctx.topo.host_rack[ctx.topo.host_index(dst) as usize];
        let port = match self.best_hop(sw, rack) {
            Some((p, _)) if c.contains(&p) => p,
            _ => {
                self.flowlets_without_best += 1;
                ctx.ecmp(sw, pkt, c)
            }
        };
        if let Some(t) = self.flowlets[sw.idx()].as_mut() {
            t.set(hash, port);
        }
        Forward::Port(port)
    }

    fn wants_enqueue(&self) -> bool {
        true
    }

    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        if ctx.topo.port_place(port) == PortPlace::HostNic {
            return;
        }
        let size = ctx.pkt(pkt).size as f64;
        let u = &mut self.util[port.idx()];
        let decay = 1.0 - (ctx.now - u.last).as_secs_f64() / self.tau.as_secs_f64();
        u.bytes = size + u.bytes * decay.max(0.0);
        u.last = ctx.now;
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("flowlets", self.flowlets_started as f64),
            ("flowlets_without_best_hop", self.flowlets_without_best as f64),
            ("probes_sent", self.probes_sent as f64),
            ("probe_bytes", self.probe_bytes_sent as f64),
            ("best_hop_changes", self.best_hop_changes as f64),
        ]
    }

    /// Each ToR's best next hop per destination ToR at the end.
    fn report(&self, topo: &Topology) -> Vec<ReportTable> {
        let mut t = ReportTable::new("best_hop_by_tor");
        for (tor, rack, hop, util) in self.tor_best_hops() {
            let (from, to) = (&topo.nodes[tor.idx()].name, &topo.nodes[topo.racks[rack as usize].idx()].name);
            t.push([from.clone(), to.clone(), "hop".into()], ReportValue::Name(topo.ports[hop.idx()].name.clone()));
            t.push([from.clone(), to.clone(), "path_utilisation".into()], ReportValue::Real(util));
        }
        vec![t]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_net::topology::{leaf_spine, LeafSpine, LinkSpec};
    use lbsim_net::Action;
    use std::collections::BTreeMap;

    fn hula(env: &Env) -> Hula {
        let g = BTreeMap::new();
        Hula::new(&Params::new(&g, PARAMS, "hula").unwrap(), &env.scheme_env()).unwrap()
    }

    /// 3 leaves × 4 spines, 10G everywhere.
    fn fabric() -> Env {
        let s = |g| LinkSpec { rate: lbsim_engine::BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        Env::from_topology(
            leaf_spine(&LeafSpine { leaves: 3, spines: 4, links_per_pair: 1, hosts_per_leaf: vec![2, 2, 2], host_link: s(10), fabric_link: s(10) }).unwrap(),
        )
    }

    /// Carries out the scheme's actions with zero link delay: probes sent
    /// from a switch arrive at once at the far end. Returns probes delivered.
    fn settle(env: &mut Env, h: &mut Hula, now: SimTime) -> usize {
        let mut n = 0;
        while !env.actions.is_empty() {
            for a in std::mem::take(&mut env.actions) {
                if let Action::SendFromSwitch { pkt, port: Some(port), .. } = a {
                    let in_port = env.topo.ports[port.idx()].peer;
                    let sw = env.topo.ports[in_port.idx()].node;
                    assert_eq!(h.on_switch_control(&mut env.ctx(now), sw, in_port, pkt), Forward::Consume);
                    env.pkts.remove(pkt.0);
                    n += 1;
                }
            }
        }
        n
    }

    /// Loads egress `port` at `frac` of its 10G rate for `dur` before `now`.
    fn load_for(env: &mut Env, h: &mut Hula, port: PortId, frac: f64, now: SimTime, dur: SimTime) {
        let gap = SimTime::from_ns((1500.0 * 8.0 / (10.0 * frac)) as u64);
        let mut t = now - dur;
        while t < now {
            let pkt = env.packet(0, 4, 1500);
            h.on_enqueue(&mut env.ctx(t), port, pkt);
            env.pkts.remove(pkt.0);
            t += gap;
        }
    }

    fn load(env: &mut Env, h: &mut Hula, port: PortId, frac: f64, now: SimTime) {
        load_for(env, h, port, frac, now, SimTime::from_ms(2));
    }

    #[test]
    fn best_hops_converge_to_the_least_utilised_spine_path() {
        let mut env = fabric();
        let mut h = hula(&env);
        let now = SimTime::from_ms(5);
        let name = |env: &Env, p: PortId| env.topo.ports[p.idx()].name.clone();
        let port = |env: &Env, n: &str| PortId(env.topo.ports.iter().position(|p| p.name == n).unwrap() as u32);
        // L0's uplinks to S0..S2 busy, S3's downlink to L2 busy: the only
        // idle path from L0 to L2 is via S2 (L0->S2 at 10 %, S2->L2 idle)
        for (p, f) in [("L0->S0#0", 0.8), ("L0->S1#0", 0.6), ("L0->S2#0", 0.1), ("L0->S3#0", 0.05), ("S3->L2#0", 0.9)] {
            let id = port(&env, p);
            load(&mut env, &mut h, id, f, now);
        }
        // one probe round from every ToR: 3 ToRs × 4 uplinks up, each
        // spine forwards each probe to the 2 other leaves
        h.on_timer(&mut env.ctx(now), 0);
        let delivered = settle(&mut env, &mut h, now);
        assert_eq!(delivered, 3 * 4 + 3 * 4 * 2);
        assert_eq!(h.probes_sent, delivered as u64);
        let l0 = env.topo.racks[0];
        let (hop, util) = h.best_hop(l0, 2).unwrap();
        assert_eq!(name(&env, hop), "L0->S2#0");
        assert!((util as f64 / UNIT - 0.1).abs() < 0.02, "{util}");
        // the spine's hop toward L2 is its one downlink, idle
        let s3 = env.topo.node_by_name("S3").unwrap();
        assert_eq!(name(&env, h.best_hop(s3, 2).unwrap().0), "S3->L2#0");
        // toward L1 (S3->L1 idle) L0's best is S3 at 5 %
        assert_eq!(name(&env, h.best_hop(l0, 1).unwrap().0), "L0->S3#0");
        // a refresh from the current best hop is taken even when worse:
        // load S2->L2 to 70 % and send another round
        let later = now + SimTime::from_us(200);
        let id = port(&env, "S2->L2#0");
        load(&mut env, &mut h, id, 0.7, later);
        // the first round's refresh from S2 raises the entry to 70 %, and a
        // probe that arrived before it may be beaten by a worse one after it
        // (S3 at 45 %); the second round settles on the best, S1 at 30 %
        for k in 0..2 {
            h.on_timer(&mut env.ctx(later + SimTime(k)), 0);
            settle(&mut env, &mut h, later + SimTime(k));
        }
        let (hop, util) = h.best_hop(l0, 2).unwrap();
        assert_eq!(name(&env, hop), "L0->S1#0", "util {util}");
        // a data flowlet to rack 2 takes the best hop, and keeps it within T_fl
        let c = env.routing.next_hops(l0, 4).to_vec();
        let pkt = env.packet(0, 4, 1500);
        let first = h.on_switch(&mut env.ctx(later), l0, PortId(0), pkt, &c);
        assert_eq!(first, Forward::Port(hop));
        h.on_timer(&mut env.ctx(later + SimTime::from_us(10)), 0);
        let id = port(&env, "L0->S1#0");
        load_for(&mut env, &mut h, id, 0.95, later + SimTime::from_us(400), SimTime::from_us(300));
        h.on_timer(&mut env.ctx(later + SimTime::from_us(400)), 0);
        settle(&mut env, &mut h, later + SimTime::from_us(400));
        assert_ne!(h.best_hop(l0, 2).unwrap().0, hop);
        let same = env.same_flow(pkt);
        assert_eq!(h.on_switch(&mut env.ctx(later + SimTime::from_us(450)), l0, PortId(0), same, &c), first, "gap under T_fl");
        let same = env.same_flow(pkt);
        let moved = h.on_switch(&mut env.ctx(later + SimTime::from_us(951)), l0, PortId(0), same, &c);
        assert_eq!(moved, Forward::Port(h.best_hop(l0, 2).unwrap().0), "gap over T_fl: the new best hop");
        assert_ne!(moved, first);
    }

    #[test]
    fn a_stale_best_hop_gives_way_after_the_keepalive() {
        let mut env = fabric();
        let mut h = hula(&env);
        let l0 = env.topo.racks[0];
        let t0 = SimTime::from_ms(1);
        h.on_timer(&mut env.ctx(t0), 0);
        settle(&mut env, &mut h, t0);
        let (hop, _) = h.best_hop(l0, 1).unwrap();
        // a worse probe on another hop within the keep-alive is ignored...
        let other = env.routing.next_hops(l0, 2).iter().copied().find(|&p| p != hop).unwrap();
        let pkt = env.ctx(t0).new_packet(Packet::to_switch(NodeId(0), l0, 64, 0, LbHeader::Hula { tor: 1, util: 100 }, t0));
        h.on_switch_control(&mut env.ctx(t0 + SimTime::from_us(900)), l0, other, pkt);
        assert_eq!(h.best_hop(l0, 1).unwrap().0, hop);
        // ... and taken once the entry is older than the keep-alive (its
        // path stopped refreshing it)
        h.on_switch_control(&mut env.ctx(t0 + SimTime::from_us(1001)), l0, other, pkt);
        assert_eq!(h.best_hop(l0, 1).unwrap(), (other, 100));
    }

    #[test]
    fn probes_that_cannot_reach_a_tor_are_refused() {
        use lbsim_net::topology::{ExplicitLink, ExplicitNode};
        // L0 - X - Y - Z - L1: X, Y and Z are one tier (no hosts), so a
        // probe from L0 goes up to X, sideways to Y (from the side: only
        // down from there) and stops: it never reaches L1
        let node = |n: &str, host: bool| ExplicitNode { name: n.into(), host };
        let spec = LinkSpec { rate: lbsim_engine::BitsPerSec::gbps(10), delay: SimTime::from_us(1) };
        let link = |a: &str, b: &str| ExplicitLink { a: a.into(), b: b.into(), spec, count: 1 };
        let topo = Topology::explicit(
            &["H0", "H1"].map(|n| node(n, true)).into_iter().chain(["L0", "L1", "X", "Y", "Z"].map(|n| node(n, false))).collect::<Vec<_>>(),
            &[link("H0", "L0"), link("H1", "L1"), link("L0", "X"), link("X", "Y"), link("Y", "Z"), link("Z", "L1")],
        )
        .unwrap();
        let env = Env::from_topology(topo);
        let g = BTreeMap::new();
        let e = Hula::new(&Params::new(&g, PARAMS, "hula").unwrap(), &env.scheme_env()).err().expect("refused");
        assert_eq!(e.msg, "hula: probes from ToR L0 cannot reach ToR L1 (they go up, then down; this fabric has no such path)");
        // a leaf-spine fabric is fine
        assert!(Hula::new(&Params::new(&g, PARAMS, "hula").unwrap(), &fabric().scheme_env()).is_ok());
    }
}
