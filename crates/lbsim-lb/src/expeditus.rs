//! Expeditus (Wang, Xu, Niu, Han, §2-§3; docs/schemes/expeditus.md): distributed
//! congestion-aware load balancing for 3-tier Clos fabrics, one decision per
//! flow (per direction), in two stages.
//!
//! - §3.1 congestion metric: ToR and aggregation switches meter each uplink
//!   in both directions with a DRE (egress when a packet is queued, ingress
//!   when one arrives), T_dre 20 µs, α 0.1 (τ 200 µs), 3-bit metric; a dead
//!   port reads as the maximum. Hosts' links and cores meter nothing.
//! - §3.1 path-selection table ([`crate::pst`]) at ToRs and aggregation
//!   switches, 100 ms idle timeout.
//! - §3.2 two stages for an inter-pod flow A (Alg. 1-2): the first packet at
//!   the source ToR carries the Expeditus tag (SF 0, one entry per uplink:
//!   its egress metrics) and goes by ECMP; the destination ToR combines each
//!   entry with its own ingress metric from the same aggregation plane,
//!   picks the plane minimising the max, strips the tag and sends an
//!   Exp-response (the request's TCP/IP header, addresses and ports swapped)
//!   up to that plane's aggregation switch; that switch appends the ingress
//!   metrics of its core uplinks; the source pod's aggregation switch of the
//!   same plane combines them with its egress metrics, picks the core, and
//!   pins A there; the source ToR pins A to the uplink the response came in
//!   on and consumes it. The reverse flow is selected on its own first packet.
//! - §3.4 one stage for intra-pod flows and 2-tier leaf-spine fabrics.
//! - §3.3 failures: link load multipliers for ToR uplinks = core uplinks
//!   configured / up at that aggregation switch (inter-pod selections only),
//!   recomputed on every link change.
//! - Ties at random from the scheme's stream (the artifact shuffles; lowest
//!   index would send every flow to plane 0 in an idle network).
//!
//! Choices are listed in docs/schemes/expeditus.md §3; the tag's bytes
//! (3 + ceil(NoE/2)) are on the wire while it is carried.

use crate::dre::{Dre, DreParams};
use crate::params::{num, DefaultValue, ParamDef, ParamError, Params};
use crate::pst::{self, Lookup, Pst};
use crate::SchemeEnv;
use lbsim_engine::{Rng, SimTime};
use lbsim_net::{cd_get, cd_set, tuple_hash, Ctx, Forward, LbHeader, LinkId, LoadBalancer, NodeId, Packet, Payload, PktId, PortId, Tier, Topology};

macro_rules! common_params {
    () => {
        [
            num("dre_period_us", "us", 20.0, "DRE decrement period T_dre (§6.1: 20 us)"),
            num("tau_us", "us", 200.0, "DRE time constant tau = T_dre / alpha (§6.1: alpha = 0.1, so 200 us; the artifact uses alpha 0.3)"),
            num("q_bits", "bits", 3.0, "bits of a congestion metric (§3.2: 3)"),
            ParamDef {
                name: "saturate",
                unit: "",
                default: DefaultValue::Bool(true),
                help: "metrics saturate at 2^q - 1 (the paper's 3-bit field); false: up to 15 as the artifact's unsaturated levels",
            },
            num("pst_timeout_us", "us", 100_000.0, "path-selection table idle timeout (§3.4: 100 ms; 500 us gives flowlet switching)"),
            num("pst_entries", "entries", 0.0, "path-selection table size: 0 = exact (the artifact's); N = direct-mapped, N slots per switch indexed by the flow hash (§3.1 sizes it at 64K = 65536), a new flow's entry replacing a colliding one"),
        ]
    };
}

const E: [ParamDef; 6] = common_params!();
pub const PARAMS: &[ParamDef] = &[
    E[0],
    E[1],
    E[2],
    E[3],
    E[4],
    E[5],
    ParamDef { name: "multipliers", unit: "", default: DefaultValue::Bool(true), help: "link load multipliers for ToR uplinks after aggregation-core failures (§3.3)" },
    ParamDef { name: "tag_bytes", unit: "", default: DefaultValue::Bool(true), help: "the tag's 3 + ceil(NoE/2) bytes are on the wire while carried (Fig. 6)" },
    ParamDef {
        name: "response",
        unit: "",
        default: DefaultValue::Str("packet"),
        help: "\"packet\": the destination ToR sends a separate Exp-response (§3.2); \"synack\": the authors' ns-3 artifact, where the reverse flow's first packet (the SYN-ACK) carries it (intra-pod: the SYN goes untagged and the SYN-ACK carries the destination's ingress loads; selections only at connection setup)",
    },
];
pub const CLAIRVOYANT_PARAMS: &[ParamDef] = &common_params!();

/// Control tag of an Exp-response packet.
pub const RESPONSE_TAG: u32 = 0xE4_0001;

/// Bytes of an Expeditus tag carrying `noe` entries: TPID 16 bits, SF 1 bit,
/// NoE 7 bits, 4 bits per entry (Fig. 6).
pub fn tag_bytes(noe: u8) -> u32 {
    3 + (noe as u32).div_ceil(2)
}

/// Where each switch's uplinks lead ([`Topology::uplink_index`]: entry `j`
/// means the same aggregation plane at every ToR and entry `k` the same
/// core at every aggregation switch of a plane), checked for what a tag
/// needs: every switch of a tier has as many uplinks, at most 16.
pub(crate) struct Fabric {
    /// Per port: its position among its switch's uplinks (`u32::MAX` if it
    /// is not the uplink of a ToR or aggregation switch).
    pub up_index: Vec<u32>,
    /// Per node: its uplinks in index order.
    pub uplinks: Vec<Vec<PortId>>,
    /// A 3-tier fabric (it has cores).
    pub three_tier: bool,
}

impl Fabric {
    pub fn new(topo: &Topology, scheme: &str) -> Result<Fabric, ParamError> {
        if !["leaf_spine", "clos3", "fat_tree"].contains(&topo.kind.as_str()) {
            return Err(ParamError {
                key: "topology.kind".into(),
                msg: format!("{scheme} needs a leaf_spine, clos3 or fat_tree fabric (its tags index aggregation planes and cores the same way at every switch); this topology is {}", topo.kind),
            });
        }
        let three_tier = topo.nodes.iter().any(|n| n.tier == Tier::Core);
        // a tag's entry j must mean the same plane / core at both ends
        let (uplinks, up_index) = topo.uplink_index();
        let mut count: [Option<(usize, String)>; 2] = [None, None];
        for (i, n) in topo.nodes.iter().enumerate() {
            let level = match n.tier {
                Tier::Leaf => 0,
                Tier::Spine if three_tier => 1,
                _ => continue,
            };
            let ups = &uplinks[i];
            match &count[level] {
                None => count[level] = Some((ups.len(), n.name.clone())),
                Some((c, first)) if *c != ups.len() => {
                    return Err(ParamError {
                        key: "topology".into(),
                        msg: format!(
                            "{scheme} needs every {} to have the same uplinks: {first} has {c}, {} has {}",
                            ["ToR", "aggregation switch"][level],
                            n.name,
                            ups.len()
                        ),
                    })
                }
                _ => {}
            }
            if ups.len() > 16 {
                return Err(ParamError {
                    key: "topology".into(),
                    msg: format!("{scheme}: a tag carries at most 16 entries; {} has {} uplinks", n.name, ups.len()),
                });
            }
        }
        Ok(Fabric { up_index, uplinks, three_tier })
    }

    pub fn is_uplink(&self, p: PortId) -> bool {
        self.up_index[p.idx()] != u32::MAX
    }

    /// Whether hosts `a` and `b` (node ids) sit in different pods of a 3-tier fabric.
    pub fn inter_pod(&self, topo: &Topology, a: NodeId, b: NodeId) -> bool {
        self.three_tier && topo.node(a).pod != topo.node(b).pod
    }
}

/// DRE meters on ports, egress and ingress, and their quantisation (§3.1).
pub(crate) struct Meters {
    pub p: DreParams,
    egress: Vec<Dre>,
    ingress: Vec<Dre>,
    /// Per port: metered.
    pub metered: Vec<bool>,
    pub max: u8,
    levels: f64,
}

impl Meters {
    pub fn new(p: &Params, topo: &Topology, metered: Vec<bool>) -> Result<Meters, ParamError> {
        let dre_p = DreParams::from_params(p, 4, " (a tag entry has 4 bits)")?;
        let levels = (1u32 << dre_p.q_bits) as f64;
        let max = if p.boolean("saturate")? { levels as u8 - 1 } else { 15 };
        Ok(Meters { p: dre_p, egress: vec![Dre::default(); topo.ports.len()], ingress: vec![Dre::default(); topo.ports.len()], metered, max, levels })
    }

    /// Utilisation of a port's egress direction (infinite if the port is down).
    pub fn egress(&mut self, ctx: &Ctx, port: PortId) -> f64 {
        let q = &ctx.ports[port.idx()];
        if !q.up {
            return f64::INFINITY;
        }
        self.egress[port.idx()].utilisation(&self.p, ctx.now, q.rate.0)
    }

    /// Utilisation of the direction arriving at `port` (the switch's own
    /// port on the link; infinite if down).
    pub fn ingress(&mut self, ctx: &Ctx, port: PortId) -> f64 {
        let q = &ctx.ports[port.idx()];
        if !q.up {
            return f64::INFINITY;
        }
        self.ingress[port.idx()].utilisation(&self.p, ctx.now, q.rate.0)
    }

    /// The metric of utilisation `u` scaled by `mult`.
    pub fn metric(&self, u: f64, mult: f64) -> u8 {
        let v = (u * mult * self.levels).floor();
        if v.is_nan() || v >= self.max as f64 {
            self.max
        } else {
            v.max(0.0) as u8
        }
    }

    pub fn on_egress(&mut self, now: SimTime, port: PortId, bytes: u32) {
        if self.metered[port.idx()] {
            self.egress[port.idx()].add(&self.p, now, bytes as u64);
        }
    }
    pub fn on_ingress(&mut self, now: SimTime, port: PortId, bytes: u32) {
        if self.metered[port.idx()] {
            self.ingress[port.idx()].add(&self.p, now, bytes as u64);
        }
    }
}

/// The index of the smallest cost, ties uniformly at random.
pub(crate) fn argmin_random(costs: &[u8], rng: &mut Rng) -> usize {
    let best = *costs.iter().min().expect("no candidates");
    let n = costs.iter().filter(|&&c| c == best).count();
    let pick = rng.below(n as u64) as usize;
    costs.iter().enumerate().filter(|(_, &c)| c == best).nth(pick).map(|(i, _)| i).unwrap()
}

/// The hash of the reverse 5-tuple of `p` (flow A's id from its response).
pub(crate) fn reverse_hash(p: &Packet) -> u64 {
    tuple_hash(p.dst, p.src, p.dport, p.sport, p.proto)
}

pub struct Expeditus {
    fab: Fabric,
    m: Meters,
    pst: pst::Tables,
    use_mult: bool,
    tag_on_wire: bool,
    header_bytes: u32,
    /// `response = "synack"` (the artifact's variant).
    synack: bool,
    /// Per node (aggregation switches): core uplinks configured / up.
    mult: Vec<f64>,
    pub selections: u64,
    pub reselections: u64,
    pub pending_ecmp: u64,
    /// Packets forwarded by a valid entry at a ToR and at an aggregation switch.
    pub tor_hits: u64,
    pub agg_hits: u64,
    pub responses_sent: u64,
    pub responses_received: u64,
    pub stage2_decisions: u64,
    pub agg_appends: u64,
    /// Per ToR uplink index: selections (stage 1) that chose it.
    pub chosen_plane: Vec<u64>,
    /// Stage-1 and stage-2 decisions where every candidate had the same
    /// cost (the metrics told nothing: a random pick, as ECMP's).
    pub stage1_all_equal: u64,
    pub stage2_all_equal: u64,
    /// Metrics read through a §3.3 multiplier other than 1, and those the
    /// multiplier changed (the mechanism's reach).
    pub mult_applied: u64,
    pub mult_changed: u64,
}

impl Expeditus {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Expeditus, ParamError> {
        let topo = env.topo;
        let fab = Fabric::new(topo, "expeditus")?;
        let metered = (0..topo.ports.len()).map(|i| fab.is_uplink(PortId(i as u32))).collect();
        let m = Meters::new(p, topo, metered)?;
        let n = fab.uplinks.iter().map(|u| u.len()).max().unwrap_or(0);
        Ok(Expeditus {
            m,
            pst: pst::Tables::new(p, topo.nodes.len())?,
            use_mult: p.boolean("multipliers")?,
            tag_on_wire: p.boolean("tag_bytes")?,
            header_bytes: env.header_bytes,
            synack: p.string("response", &["packet", "synack"])? == "synack",
            mult: vec![1.0; topo.nodes.len()],
            selections: 0,
            reselections: 0,
            pending_ecmp: 0,
            tor_hits: 0,
            agg_hits: 0,
            responses_sent: 0,
            responses_received: 0,
            stage2_decisions: 0,
            agg_appends: 0,
            chosen_plane: vec![0; n],
            stage1_all_equal: 0,
            stage2_all_equal: 0,
            mult_applied: 0,
            mult_changed: 0,
            fab,
        })
    }

    fn pst(&mut self, sw: NodeId) -> &mut Pst {
        self.pst.at(sw)
    }

    /// Live entries replaced by a colliding flow's, over every switch
    /// (a direct-mapped table only).
    pub fn pst_evictions(&self) -> u64 {
        self.pst.evictions()
    }

    /// The path-selection table of switch `sw` (tests, reports).
    pub fn table(&self, sw: NodeId) -> Option<&Pst> {
        self.pst.get(sw)
    }

    /// §3.3: the link load multiplier of a ToR uplink (by the aggregation
    /// switch it leads to) for an inter-pod selection.
    pub fn multiplier(&self, topo: &Topology, tor_uplink: PortId) -> f64 {
        self.mult[topo.port(topo.port(tor_uplink).peer).node.idx()]
    }

    fn recompute_multipliers(&mut self, ctx: &Ctx) {
        if !self.use_mult || !self.fab.three_tier {
            return;
        }
        for (i, n) in ctx.topo.nodes.iter().enumerate() {
            if n.tier == Tier::Spine {
                let ups = &self.fab.uplinks[i];
                let live = ups.iter().filter(|p| ctx.ports[p.idx()].up).count();
                self.mult[i] = if live == 0 { f64::INFINITY } else { ups.len() as f64 / live as f64 };
            }
        }
    }

    /// Test hook: `bytes` queued on `port` at `t`.
    #[cfg(test)]
    pub(crate) fn on_enqueue_bytes(&mut self, t: SimTime, port: PortId, bytes: u32) {
        self.m.on_egress(t, port, bytes);
    }

    fn tag_delta(&self, noe: u8) -> i32 {
        if self.tag_on_wire {
            tag_bytes(noe) as i32
        } else {
            0
        }
    }

    /// The metrics of `sw`'s uplinks (egress or ingress direction), scaled by
    /// the §3.3 multipliers for an inter-pod selection, as tag entries.
    fn local_metrics(&mut self, ctx: &Ctx, sw: NodeId, ingress: bool, inter: bool) -> ([u32; 2], u8) {
        let mut cd = [0u32; 2];
        let n = self.fab.uplinks[sw.idx()].len();
        for j in 0..n {
            let u = self.fab.uplinks[sw.idx()][j];
            let mult = if inter { self.multiplier(ctx.topo, u) } else { 1.0 };
            let util = if ingress { self.m.ingress(ctx, u) } else { self.m.egress(ctx, u) };
            let m = self.m.metric(util, mult);
            if mult != 1.0 {
                self.mult_applied += 1;
                self.mult_changed += (m != self.m.metric(util, 1.0)) as u64;
            }
            cd_set(&mut cd, j, m);
        }
        (cd, n as u8)
    }

    /// A decision at `sw`: the uplink minimising max(carried entry, own
    /// metric) among those routing offers toward host node `toward` (a dead
    /// port reads the largest metric, §3.3, but must never win a tie);
    /// ties at random. Returns the uplink's index and whether every
    /// candidate had the same cost.
    fn decide(&mut self, ctx: &mut Ctx, sw: NodeId, carried: ([u32; 2], u8), ingress: bool, inter: bool, toward: NodeId) -> (usize, bool) {
        let (own, n) = self.local_metrics(ctx, sw, ingress, inter);
        let (cd, noe) = carried;
        let routes = ctx.routing.next_hops(sw, ctx.topo.host_index(toward));
        let mut cost = [0u8; 16];
        for (j, slot) in cost.iter_mut().enumerate().take(n as usize) {
            let c = if j < noe as usize { cd_get(&cd, j) } else { self.m.max };
            *slot = if routes.contains(&self.fab.uplinks[sw.idx()][j]) { c.max(cd_get(&own, j)) } else { u8::MAX };
        }
        let cost = &cost[..n as usize];
        (argmin_random(cost, ctx.rng), cost.iter().all(|&c| c == cost[0]))
    }

    /// ToR: a northbound packet (this is the flow's source ToR).
    fn tor_up(&mut self, ctx: &mut Ctx, sw: NodeId, pkt: PktId, cands: &[PortId]) -> Forward {
        let p = *ctx.pkt(pkt);
        if !matches!(p.payload, Payload::Tcp { .. } | Payload::Udp { .. }) {
            return Forward::Port(ctx.ecmp(sw, pkt, cands));
        }
        let now = ctx.now;
        let synack = p.tcp().is_some_and(|h| h.has(lbsim_tcp::header::SYN) && h.has(lbsim_tcp::header::ACK));
        match self.pst(sw).lookup(p.hash, now, cands) {
            Lookup::Valid(port) => {
                self.tor_hits += 1;
                // (a retransmitted SYN-ACK answers again: the first may be lost)
                if self.synack && (self.pst(sw).take_mark(p.hash) || synack) {
                    // the artifact: this packet (the SYN-ACK) is the Exp-response
                    ctx.pkt_mut(pkt).lb = LbHeader::Expeditus { sf: true, noe: 0, cd: [0; 2] };
                    let d = self.tag_delta(0);
                    ctx.resize(pkt, d);
                    self.responses_sent += 1;
                }
                Forward::Port(port)
            }
            Lookup::Pending => {
                self.pending_ecmp += 1;
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            Lookup::Select if self.synack && !self.fab.inter_pod(ctx.topo, p.src, p.dst) => {
                // the artifact's one stage: the SYN goes untagged; the
                // destination's SYN-ACK carries its ingress loads back and
                // the source ToR decides; the reverse flow stays on ECMP
                self.selections += 1;
                self.pst(sw).set_pending(p.hash, now);
                if synack {
                    let (cd, noe) = self.local_metrics(ctx, sw, true, false);
                    ctx.pkt_mut(pkt).lb = LbHeader::Expeditus { sf: true, noe, cd };
                    let d = self.tag_delta(noe);
                    ctx.resize(pkt, d);
                    self.responses_sent += 1;
                }
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            Lookup::Select => {
                // Alg. 1 lines 11-16: tag with the egress metrics, forward by
                // ECMP. A selection for a flow that had an entry (timed out or
                // its port died), or started by a TCP segment other than a
                // SYN, is a re-selection.
                self.selections += 1;
                // (the lookup removes nothing: an entry still present had timed out or lost its port)
                if self.pst(sw).contains(p.hash) || p.tcp().is_some_and(|h| h.flags & lbsim_tcp::header::SYN == 0) {
                    self.reselections += 1;
                }
                self.pst(sw).set_pending(p.hash, now);
                let inter = self.fab.inter_pod(ctx.topo, p.src, p.dst);
                let (cd, noe) = self.local_metrics(ctx, sw, false, inter);
                ctx.pkt_mut(pkt).lb = LbHeader::Expeditus { sf: false, noe, cd };
                let d = self.tag_delta(noe);
                ctx.resize(pkt, d);
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
        }
    }

    /// ToR: a southbound packet (this is the destination ToR).
    fn tor_down(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId, cands: &[PortId]) -> Forward {
        let p = *ctx.pkt(pkt);
        match p.lb {
            LbHeader::Expeditus { sf: false, noe, cd } => {
                // Alg. 1 lines 17-21: the first stage's decision
                ctx.pkt_mut(pkt).lb = LbHeader::None;
                let d = self.tag_delta(noe);
                ctx.resize(pkt, -d);
                let inter = self.fab.inter_pod(ctx.topo, p.src, p.dst);
                // the response goes back to the source: planes routing offers that way
                let (j, blind) = self.decide(ctx, sw, (cd, noe), true, inter, p.src);
                let up = self.fab.uplinks[sw.idx()][j];
                self.chosen_plane[j] += 1;
                self.stage1_all_equal += blind as u64;
                if self.synack {
                    // the artifact: the reverse flow leaves by the chosen plane
                    // and its first packet carries the response
                    let key = reverse_hash(&p);
                    self.pst(sw).install_marked(key, up, ctx.now);
                    return Forward::Port(ctx.ecmp(sw, pkt, cands));
                }
                let mut r = Packet::new(
                    p.dst,
                    p.src,
                    p.dport,
                    p.sport,
                    p.proto,
                    self.header_bytes + self.tag_delta(0) as u32,
                    Payload::Control { tag: RESPONSE_TAG },
                    ctx.now,
                );
                r.lb = LbHeader::Expeditus { sf: true, noe: 0, cd: [0; 2] };
                let id = ctx.new_packet(r);
                ctx.send_from_switch(sw, id, Some(up));
                self.responses_sent += 1;
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            LbHeader::Expeditus { sf: true, noe, cd } if noe > 0 && !self.fab.inter_pod(ctx.topo, p.src, p.dst) => {
                // the artifact's one stage (response = "synack"): the SYN-ACK
                // carries the destination's ingress loads; decide here
                ctx.pkt_mut(pkt).lb = LbHeader::None;
                let d = self.tag_delta(noe);
                ctx.resize(pkt, -d);
                let (j, blind) = self.decide(ctx, sw, (cd, noe), false, false, p.src);
                self.chosen_plane[j] += 1;
                self.stage1_all_equal += blind as u64;
                let up = self.fab.uplinks[sw.idx()][j];
                self.pst(sw).install(reverse_hash(&p), up, ctx.now);
                self.responses_received += 1;
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            LbHeader::Expeditus { sf: true, noe, .. } => {
                // Alg. 1 lines 22-24: the source ToR pins the flow to the
                // uplink the response came in on; a separate response is
                // consumed, a SYN-ACK carrying it (the artifact) delivered
                let key = reverse_hash(&p);
                self.pst(sw).install(key, in_port, ctx.now);
                self.responses_received += 1;
                if matches!(p.payload, Payload::Control { tag: RESPONSE_TAG }) {
                    return Forward::Consume;
                }
                ctx.pkt_mut(pkt).lb = LbHeader::None;
                let d = self.tag_delta(noe);
                ctx.resize(pkt, -d);
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            _ => Forward::Port(ctx.ecmp(sw, pkt, cands)),
        }
    }

    /// Aggregation switch of a 3-tier fabric (Alg. 2).
    fn agg(&mut self, ctx: &mut Ctx, sw: NodeId, pkt: PktId, cands: &[PortId]) -> Forward {
        let p = *ctx.pkt(pkt);
        let now = ctx.now;
        let northbound = self.fab.is_uplink(cands[0]);
        match p.lb {
            LbHeader::Expeditus { sf: true, noe: 0, cd } if northbound => {
                // destination pod: append the ingress metrics of the core uplinks
                let _ = cd;
                let (cd, noe) = self.local_metrics(ctx, sw, true, false);
                let grow = self.tag_delta(noe) - self.tag_delta(0);
                ctx.pkt_mut(pkt).lb = LbHeader::Expeditus { sf: true, noe, cd };
                ctx.resize(pkt, grow);
                self.agg_appends += 1;
                let port = self.pst(sw).valid_port(p.hash, now, cands);
                Forward::Port(port.unwrap_or_else(|| ctx.ecmp(sw, pkt, cands)))
            }
            LbHeader::Expeditus { sf: false, .. } => Forward::Port(ctx.ecmp(sw, pkt, cands)),
            LbHeader::Expeditus { sf: true, noe, cd } if !northbound && noe > 0 && self.fab.inter_pod(ctx.topo, p.src, p.dst) => {
                // source pod: the second stage's decision for the flow the response answers
                // the flow goes to the response's source: core uplinks routing still offers
                let (k, blind) = self.decide(ctx, sw, (cd, noe), false, false, p.src);
                self.stage2_all_equal += blind as u64;
                let key = reverse_hash(&p);
                let up = self.fab.uplinks[sw.idx()][k];
                self.pst(sw).install(key, up, now);
                self.stage2_decisions += 1;
                Forward::Port(ctx.ecmp(sw, pkt, cands))
            }
            _ if northbound => {
                let port = self.pst(sw).valid_port(p.hash, now, cands);
                if port.is_some() {
                    self.agg_hits += 1;
                }
                Forward::Port(port.unwrap_or_else(|| ctx.ecmp(sw, pkt, cands)))
            }
            _ => Forward::Port(ctx.ecmp(sw, pkt, cands)),
        }
    }
}

impl LoadBalancer for Expeditus {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn start(&mut self, ctx: &mut Ctx) {
        self.recompute_multipliers(ctx);
    }

    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId, cands: &[PortId]) -> Forward {
        let size = ctx.pkt(pkt).size;
        self.m.on_ingress(ctx.now, in_port, size);
        match ctx.topo.node(sw).tier {
            Tier::Leaf if self.fab.is_uplink(cands[0]) => self.tor_up(ctx, sw, pkt, cands),
            Tier::Leaf => self.tor_down(ctx, sw, in_port, pkt, cands),
            Tier::Spine if self.fab.three_tier => self.agg(ctx, sw, pkt, cands),
            _ => Forward::Port(ctx.ecmp(sw, pkt, cands)),
        }
    }

    fn wants_enqueue(&self) -> bool {
        true
    }

    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        let size = ctx.pkt(pkt).size;
        self.m.on_egress(ctx.now, port, size);
    }

    fn on_link_change(&mut self, ctx: &mut Ctx, _link: LinkId, _up: bool) {
        self.recompute_multipliers(ctx);
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("selections", self.selections as f64),
            ("reselections", self.reselections as f64),
            ("responses_sent", self.responses_sent as f64),
            ("responses_received", self.responses_received as f64),
            // lost requests or responses: those flows travel by ECMP (§3.2)
            ("selections_unanswered", self.selections.saturating_sub(self.responses_received) as f64),
            ("stage2_decisions", self.stage2_decisions as f64),
            ("agg_appends", self.agg_appends as f64),
            ("tor_pst_hits", self.tor_hits as f64),
            ("agg_pst_hits", self.agg_hits as f64),
            ("pending_ecmp_packets", self.pending_ecmp as f64),
            ("stage1_all_equal", self.stage1_all_equal as f64),
            ("stage2_all_equal", self.stage2_all_equal as f64),
            ("multiplied_metrics", self.mult_applied as f64),
            ("metrics_changed_by_multipliers", self.mult_changed as f64),
            ("pst_evictions", self.pst_evictions() as f64),
        ];
        const NAMES: [&str; 8] =
            ["plane0_chosen", "plane1_chosen", "plane2_chosen", "plane3_chosen", "plane4_chosen", "plane5_chosen", "plane6_chosen", "plane7_chosen"];
        for (i, c) in self.chosen_plane.iter().enumerate().take(8) {
            v.push((NAMES[i], *c as f64));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_engine::BitsPerSec;
    use lbsim_net::topology::{clos3, leaf_spine, Clos3, LeafSpine, LinkSpec};
    use lbsim_net::Action;
    use std::collections::BTreeMap;

    fn spec() -> LinkSpec {
        LinkSpec { rate: BitsPerSec::gbps(10), delay: SimTime::from_us(2) }
    }

    /// Fig. 3/7: 3 pods of 3 ToRs and 2 aggregation switches, 4 cores (2 per plane), 2 hosts per ToR.
    pub(crate) fn fig7() -> Env {
        Env::from_topology(
            clos3(&Clos3 {
                pods: 3,
                tors_per_pod: 3,
                aggs_per_pod: 2,
                cores: 4,
                hosts_per_tor: 2,
                host_link: spec(),
                tor_agg_link: spec(),
                agg_core_link: spec(),
            })
            .unwrap(),
        )
    }

    fn build(env: &Env, given: &[(&str, crate::Value)]) -> Expeditus {
        let g: BTreeMap<String, crate::Value> = given.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let e = env.scheme_env();
        Expeditus::new(&Params::new(&g, PARAMS, "expeditus").unwrap(), &e).unwrap()
    }

    fn port(env: &Env, name: &str) -> PortId {
        let v = env.topo.match_ports(name);
        assert_eq!(v.len(), 1, "{name}");
        v[0]
    }

    /// Bytes that make a DRE read metric `m` (of 8 levels) on a 10G port at t = 0.
    fn load_bytes(m: u8) -> u64 {
        let c_tau = 10e9 / 8.0 * 200e-6;
        ((m as f64 + 0.5) / 8.0 * c_tau) as u64
    }

    /// Runs a packet through switch `name` arriving on port `in_name` (the
    /// switch's own port), returning the decision.
    /// `from`: the name of the switch's own port the packet arrives on,
    /// or "host:N" for the port facing host N.
    fn at(env: &mut Env, x: &mut Expeditus, now: SimTime, name: &str, from: &str, pkt: PktId) -> Forward {
        let sw = env.topo.node_by_name(name).unwrap();
        let in_port = match from.strip_prefix("host:") {
            Some(h) => env.topo.port(env.topo.nic(env.topo.host(h.parse().unwrap()))).peer,
            None => port(env, from),
        };
        let dst = env.topo.host_index(env.pkts.get(pkt.0).dst);
        let cands = env.routing.next_hops(sw, dst).to_vec();
        x.on_switch(&mut env.ctx(now), sw, in_port, pkt, &cands)
    }

    fn take_sends(env: &mut Env) -> Vec<(NodeId, PktId, Option<PortId>)> {
        let v = env.actions.iter().filter_map(|a| if let Action::SendFromSwitch { sw, pkt, port } = a { Some((*sw, *pkt, *port)) } else { None }).collect();
        env.actions.clear();
        v
    }

    #[test]
    fn two_stages_pin_the_flow_to_the_chosen_agg_and_core() {
        let mut env = fig7();
        let mut x = build(&env, &[]);
        let t0 = SimTime::from_us(1);
        // host 0 (T0_0, pod 0) -> host 6 (T1_0, pod 1)
        // source egress: uplink to A0_0 at 2, to A0_1 at 0
        x.m.on_egress(t0, port(&env, "T0_0->A0_0"), load_bytes(2) as u32);
        // destination ingress: from A1_0 at 1, from A1_1 at 5
        x.m.on_ingress(t0, port(&env, "T1_0->A1_0"), load_bytes(1) as u32);
        x.m.on_ingress(t0, port(&env, "T1_0->A1_1"), load_bytes(5) as u32);
        let syn = env.packet(0, 6, 64);
        let Forward::Port(_) = at(&mut env, &mut x, t0, "T0_0", "host:0", syn) else { panic!() };
        let LbHeader::Expeditus { sf: false, noe: 2, cd } = env.pkts.get(syn.0).lb else { panic!("{:?}", env.pkts.get(syn.0).lb) };
        assert_eq!((cd_get(&cd, 0), cd_get(&cd, 1)), (2, 0));
        assert_eq!(env.pkts.get(syn.0).size, 64 + 4, "tag with 2 entries = 4 bytes");
        // pending: the next packet goes ECMP, untagged
        let next = env.same_flow(syn);
        env.pkts.get_mut(next.0).lb = LbHeader::None;
        at(&mut env, &mut x, t0, "T0_0", "host:0", next);
        assert_eq!(env.pkts.get(next.0).lb, LbHeader::None);
        assert_eq!(x.pending_ecmp, 1);
        // destination ToR: effective [max(2,1), max(0,5)] = [2, 5] -> agg 0
        // although agg 1 is the idler one at the source
        env.actions.clear();
        let f = at(&mut env, &mut x, t0, "T1_0", "T1_0->A1_1", syn);
        assert!(matches!(f, Forward::Port(p) if env.topo.port(p).name.starts_with("T1_0->H")));
        assert_eq!(env.pkts.get(syn.0).lb, LbHeader::None, "stripped");
        assert_eq!(env.pkts.get(syn.0).size, 64);
        let sends = take_sends(&mut env);
        assert_eq!(sends.len(), 1, "exactly one response");
        let (_, resp, out) = sends[0];
        assert_eq!(out, Some(port(&env, "T1_0->A1_0")));
        let r = *env.pkts.get(resp.0);
        assert_eq!((r.lb, r.size), (LbHeader::Expeditus { sf: true, noe: 0, cd: [0; 2] }, 52 + 3));
        assert_eq!(reverse_hash(&r), env.pkts.get(syn.0).hash, "the response names flow A by its reverse tuple");
        // destination-pod agg A1_0 appends its core ingress metrics: C0 at 6, C1 at 1
        x.m.on_ingress(t0, port(&env, "A1_0->C0"), load_bytes(6) as u32);
        x.m.on_ingress(t0, port(&env, "A1_0->C1"), load_bytes(1) as u32);
        at(&mut env, &mut x, t0, "A1_0", "A1_0->T1_0", resp);
        let LbHeader::Expeditus { sf: true, noe: 2, cd } = env.pkts.get(resp.0).lb else { panic!() };
        assert_eq!((cd_get(&cd, 0), cd_get(&cd, 1)), (6, 1));
        assert_eq!(env.pkts.get(resp.0).size, 52 + 4);
        // source-pod agg A0_0: own egress C0 at 0, C1 at 3 -> [6, 3] -> C1
        x.m.on_egress(t0, port(&env, "A0_0->C1"), load_bytes(3) as u32);
        at(&mut env, &mut x, t0, "A0_0", "A0_0->C0", resp);
        let a00 = env.topo.node_by_name("A0_0").unwrap();
        let key = env.pkts.get(syn.0).hash;
        assert_eq!(x.table(a00).unwrap().get(key, t0).map(|e| (e.port, e.valid, e.pss)), Some((port(&env, "A0_0->C1"), true, true)));
        // source ToR: installs the ingress port and consumes the response
        let f = at(&mut env, &mut x, t0, "T0_0", "T0_0->A0_0", resp);
        assert_eq!(f, Forward::Consume);
        // every later packet of A crosses A0_0 then C1
        for i in 0..20 {
            let d = env.same_flow(syn);
            env.pkts.get_mut(d.0).lb = LbHeader::None;
            let now = t0 + SimTime::from_us(10 * i);
            assert_eq!(at(&mut env, &mut x, now, "T0_0", "host:0", d), Forward::Port(port(&env, "T0_0->A0_0")));
            assert_eq!(at(&mut env, &mut x, now, "A0_0", "A0_0->T0_0", d), Forward::Port(port(&env, "A0_0->C1")));
        }
        assert_eq!((x.selections, x.responses_sent, x.responses_received, x.stage2_decisions, x.agg_appends), (1, 1, 1, 1, 1));
    }

    #[test]
    fn in_synack_mode_every_syn_ack_carries_the_response_but_data_once() {
        use lbsim_tcp::header::{ACK, SYN};
        use lbsim_tcp::TcpHeader;
        let mut env = fig7();
        let mut x = build(&env, &[("response", crate::Value::Str("synack".into()))]);
        let t0 = SimTime::from_us(1);
        // SYN host 0 (T0_0) -> host 6 (T1_0): tagged at the source ToR,
        // decided at the destination ToR, which marks the reverse flow
        let syn = env.packet(0, 6, 64);
        at(&mut env, &mut x, t0, "T0_0", "host:0", syn);
        at(&mut env, &mut x, t0, "T1_0", "T1_0->A1_0", syn);
        assert!(take_sends(&mut env).is_empty(), "no separate response packet");
        let s = *env.pkts.get(syn.0);
        let reply = |env: &mut Env, flags: u8| {
            let mut r = Packet::new(
                s.dst,
                s.src,
                s.dport,
                s.sport,
                s.proto,
                64,
                Payload::Tcp { conn: 0, to_receiver: false, hdr: TcpHeader { flags, ..Default::default() } },
                t0,
            );
            r.lb = LbHeader::None;
            env.ctx(t0).new_packet(r)
        };
        let responds = |env: &Env, id: PktId| matches!(env.pkts.get(id.0).lb, LbHeader::Expeditus { sf: true, .. });
        // the SYN-ACK answers; a retransmitted SYN-ACK answers again (the
        // first may have been lost); a later data packet does not
        for (flags, want) in [(SYN | ACK, true), (SYN | ACK, true), (ACK, false)] {
            let r = reply(&mut env, flags);
            at(&mut env, &mut x, t0, "T1_0", "host:6", r);
            assert_eq!(responds(&env, r), want, "flags {flags}");
        }
        assert_eq!(x.responses_sent, 2);
    }

    #[test]
    fn random_ties_spread_evenly_and_entries_expire() {
        // 6 planes, idle network: 6,000 new flows -> 1,000 +- 150 per agg
        let mut env = Env::from_topology(
            clos3(&Clos3 {
                pods: 2,
                tors_per_pod: 1,
                aggs_per_pod: 6,
                cores: 6,
                hosts_per_tor: 2,
                host_link: spec(),
                tor_agg_link: spec(),
                agg_core_link: spec(),
            })
            .unwrap(),
        );
        let mut x = build(&env, &[]);
        for i in 0..6000 {
            let p = env.packet(0, 2, 64);
            let now = SimTime::from_us(i);
            at(&mut env, &mut x, now, "T0_0", "host:0", p);
            at(&mut env, &mut x, now, "T1_0", "T1_0->A1_0", p);
            env.actions.clear();
        }
        for (j, &c) in x.chosen_plane.iter().enumerate() {
            assert!((850..=1150).contains(&c), "plane {j}: {c}");
        }
        // a flow idle for more than 100 ms is selected again on its next packet
        let p = env.packet(0, 2, 64);
        at(&mut env, &mut x, SimTime::from_ms(10), "T0_0", "host:0", p);
        let again = env.same_flow(p);
        env.pkts.get_mut(again.0).lb = LbHeader::None;
        at(&mut env, &mut x, SimTime::from_ms(111), "T0_0", "host:0", again);
        assert!(matches!(env.pkts.get(again.0).lb, LbHeader::Expeditus { sf: false, .. }), "re-tagged after the timeout");
        assert_eq!(x.reselections, 1);
    }

    #[test]
    fn multipliers_follow_agg_core_failures_for_inter_pod_only() {
        let mut env = fig7();
        let mut x = build(&env, &[]);
        x.start(&mut env.ctx(SimTime::ZERO));
        let up = port(&env, "T0_1->A0_0");
        assert_eq!(x.multiplier(&env.topo, up), 1.0);
        // A0_0 loses one of its two core links
        let l = env.topo.match_links("A0_0-C0")[0];
        for p in env.topo.links[l.idx()].ports {
            env.ports[p.idx()].up = false;
        }
        x.on_link_change(&mut env.ctx(SimTime::ZERO), l, false);
        assert_eq!(x.multiplier(&env.topo, up), 2.0);
        assert_eq!(x.multiplier(&env.topo, port(&env, "T0_1->A0_1")), 1.0);
        // an inter-pod request from T0_1 reports the uplink to A0_0 doubled; intra-pod does not
        let t = SimTime::from_us(1);
        x.m.on_egress(t, up, load_bytes(2) as u32);
        let inter = env.packet(2, 8, 64);
        at(&mut env, &mut x, t, "T0_1", "host:2", inter);
        let intra = env.packet(2, 4, 64);
        at(&mut env, &mut x, t, "T0_1", "host:2", intra);
        let get = |e: &Env, p: PktId| match e.pkts.get(p.0).lb {
            LbHeader::Expeditus { cd, .. } => cd_get(&cd, 0),
            _ => panic!(),
        };
        assert_eq!((get(&env, inter), get(&env, intra)), (5, 2));
        // restored: back to 1
        for p in env.topo.links[l.idx()].ports {
            env.ports[p.idx()].up = true;
        }
        x.on_link_change(&mut env.ctx(SimTime::ZERO), l, true);
        assert_eq!(x.multiplier(&env.topo, up), 1.0);
        // a ToR uplink down reads the maximum
        let u = port(&env, "T0_2->A0_1");
        env.ports[u.idx()].up = false;
        let p = env.packet(4, 8, 64);
        at(&mut env, &mut x, t, "T0_2", "host:4", p);
        let LbHeader::Expeditus { cd, .. } = env.pkts.get(p.0).lb else { panic!() };
        assert_eq!(cd_get(&cd, 1), 7);
    }

    #[test]
    fn one_stage_in_leaf_spine_and_refusals() {
        let mut env = Env::from_topology(
            leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 1, hosts_per_leaf: vec![2, 2], host_link: spec(), fabric_link: spec() }).unwrap(),
        );
        let mut x = build(&env, &[]);
        let t = SimTime::from_us(1);
        x.m.on_egress(t, port(&env, "L0->S0"), load_bytes(1) as u32);
        x.m.on_ingress(t, port(&env, "L1->S1"), load_bytes(3) as u32);
        let p = env.packet(0, 2, 64);
        at(&mut env, &mut x, t, "L0", "host:0", p);
        at(&mut env, &mut x, t, "L1", "L1->S0", p);
        let sends = take_sends(&mut env);
        assert_eq!(sends[0].2, Some(port(&env, "L1->S0")), "max(1,0)=1 < max(0,3)=3");
        // the spine ignores a NoE = 0 response and forwards it down
        let resp = sends[0].1;
        let f = at(&mut env, &mut x, t, "S0", "S0->L1", resp);
        assert_eq!(f, Forward::Port(port(&env, "S0->L0")));
        assert_eq!(at(&mut env, &mut x, t, "L0", "L0->S0", resp), Forward::Consume);
        let d = env.same_flow(p);
        env.pkts.get_mut(d.0).lb = LbHeader::None;
        assert_eq!(at(&mut env, &mut x, t, "L0", "host:0", d), Forward::Port(port(&env, "L0->S0")));
        // an explicit topology is refused, naming the field
        let e = Env::testbed();
        let mut topo = e.topo.clone();
        topo.kind = "explicit".into();
        let env2 = Env::from_topology(topo);
        let err = Expeditus::new(&Params::new(&BTreeMap::new(), PARAMS, "expeditus").unwrap(), &env2.scheme_env()).err().unwrap();
        assert_eq!(err.key, "topology.kind");
    }

    #[test]
    fn meters_settle_and_ingress_mirrors_the_feeding_egress() {
        // 5.5 Gb/s of 1,500 B packets on a 10G uplink: within alpha (10 %) of R * tau, plus a packet.
        // alpha = 0.1 leaves a sawtooth between R*tau*(1 - alpha) = 0.495 just
        // after a decay tick and 0.55, so the metric reads 4 (floor(0.55 * 8))
        // most of the time and 3 just after ticks (a steady 4 would need a
        // smaller alpha)
        let mut env = fig7();
        let mut x = build(&env, &[]);
        // the aggregation switch's downlinks are not Expeditus meters: a
        // meter set on every fabric port (Clairvoyant's) gives the feeding egress
        let none = BTreeMap::new();
        let mut all = Meters::new(&Params::new(&none, PARAMS, "expeditus").unwrap(), &env.topo, env.topo.fabric_ports()).unwrap();
        let up = port(&env, "T0_0->A0_0");
        let down = port(&env, "A0_0->T0_0");
        let gap = SimTime((1500.0 * 8.0 / 5.5e9 * 1e12) as u64);
        let mut t = SimTime::ZERO;
        let mut worst: f64 = 0.0;
        let (mut fours, mut probes) = (0u32, 0u32);
        while t < SimTime::from_ms(3) {
            x.m.on_egress(t, up, 1500);
            // the same packets leave A0_0 toward T0_0 and arrive there: egress at A0_0, ingress at T0_0
            all.on_egress(t, down, 1500);
            x.m.on_ingress(t, up, 1500);
            if t > SimTime::from_ms(1) {
                let probe = t + SimTime::from_ns(700);
                let u = x.m.egress(&env.ctx(probe), up);
                worst = worst.max((u - 0.55).abs() / 0.55);
                let m = x.m.metric(u, 1.0);
                assert!(m == 3 || m == 4, "{m}");
                fours += (m == 4) as u32;
                probes += 1;
                let i = x.m.ingress(&env.ctx(probe), up);
                let e = all.egress(&env.ctx(probe), down);
                assert!((i - e).abs() < 1e-9, "ingress {i} vs feeding egress {e}");
            }
            t += gap;
        }
        assert!(worst < 0.11, "worst deviation {worst} (the sawtooth is alpha = 10 %, plus one packet)");
        assert!(fours * 10 > probes * 6, "{fours} of {probes} probes read 4");
    }

    #[test]
    fn a_half_installed_agg_entry_expires_after_the_timeout() {
        // stage 2 installs A's entry at the source aggregation switch; if the
        // response is then lost, nothing refreshes it and it expires
        let mut env = fig7();
        let mut x = build(&env, &[]);
        let t0 = SimTime::from_us(1);
        let syn = env.packet(0, 6, 64);
        at(&mut env, &mut x, t0, "T0_0", "host:0", syn);
        at(&mut env, &mut x, t0, "T1_0", "T1_0->A1_0", syn);
        let (_, resp, out) = take_sends(&mut env)[0];
        let plane = env.topo.port(out.unwrap()).name.chars().nth(9).unwrap();
        let (agg_d, agg_s) = (format!("A1_{plane}"), format!("A0_{plane}"));
        at(&mut env, &mut x, t0, &agg_d, &format!("{agg_d}->T1_0"), resp);
        let core_in =
            env.topo.nodes[env.topo.node_by_name(&agg_s).unwrap().idx()].ports.iter().copied().find(|&p| env.topo.port(p).name.contains("->C")).unwrap();
        let name = env.topo.port(core_in).name.clone();
        at(&mut env, &mut x, t0, &agg_s, &name, resp);
        let key = env.pkts.get(syn.0).hash;
        let a = env.topo.node_by_name(&agg_s).unwrap();
        assert!(x.table(a).unwrap().get(key, t0 + SimTime::from_ms(100)).is_some());
        assert!(x.table(a).unwrap().get(key, t0 + SimTime::from_ms(100) + SimTime::from_ns(1)).is_none());
    }

    #[test]
    fn in_leaf_spine_expeditus_and_clairvoyant_pick_the_same_spine() {
        // §6.6: "Expeditus is equivalent to Clairvoyant in leaf-spine": the
        // destination leaf's ingress from spine j is spine j's egress to it
        use crate::clairvoyant::{Clairvoyant, PARAMS as CP};
        let ls = || {
            Env::from_topology(
                leaf_spine(&LeafSpine { leaves: 2, spines: 4, links_per_pair: 1, hosts_per_leaf: vec![2, 2], host_link: spec(), fabric_link: spec() }).unwrap(),
            )
        };
        let mut rng = Rng::stream(7, "t");
        let mut agreed = 0;
        for trial in 0..40 {
            let mut env = ls();
            let mut x = build(&env, &[]);
            let mut c = Clairvoyant::new(&Params::new(&BTreeMap::new(), CP, "clairvoyant").unwrap(), &env.scheme_env()).unwrap();
            let t = SimTime::from_us(1);
            // distinct costs so the argmin is unique: a permutation of 0..4 per hop
            let (a, b) = (rng.permutation(4), rng.permutation(4));
            for s_ in 0..4 {
                let up = port(&env, &format!("L0->S{s_}"));
                let down = port(&env, &format!("S{s_}->L1"));
                let (ba, bb) = (load_bytes(2 * a[s_] as u8) as u32, load_bytes(2 * b[s_] as u8) as u32);
                x.m.on_egress(t, up, ba);
                c.on_enqueue_bytes(t, up, ba);
                x.m.on_ingress(t, port(&env, &format!("L1->S{s_}")), bb);
                c.on_enqueue_bytes(t, down, bb);
            }
            let p = env.packet(0, 2, 64);
            at(&mut env, &mut x, t, "L0", "host:0", p);
            at(&mut env, &mut x, t, "L1", "L1->S0", p);
            let chosen_x = take_sends(&mut env)[0].2.unwrap();
            let l0 = env.topo.node_by_name("L0").unwrap();
            let cands = env.routing.next_hops(l0, 2).to_vec();
            let in0 = env.topo.port(env.topo.nic(env.topo.host(0))).peer;
            let q = env.packet(0, 2, 64);
            let Forward::Port(chosen_c) = c.on_switch(&mut env.ctx(t), l0, in0, q, &cands) else { panic!() };
            let sx = env.topo.port(env.topo.port(chosen_x).peer).node;
            let sc = env.topo.port(env.topo.port(chosen_c).peer).node;
            let costs: Vec<usize> = (0..4).map(|j| a[j].max(b[j])).collect();
            let best = *costs.iter().min().unwrap();
            if costs.iter().filter(|&&v| v == best).count() == 1 {
                assert_eq!(sx, sc, "trial {trial}: costs {costs:?}");
                agreed += 1;
            }
        }
        assert!(agreed >= 10, "{agreed} trials with a unique best spine");
    }
}
