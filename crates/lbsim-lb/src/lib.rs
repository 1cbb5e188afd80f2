//! # lbsim-lb
//!
//! The load-balancing schemes, one file each, all implementing
//! [`lbsim_net::LoadBalancer`] (the smoltcp `congestion/` layout). The
//! [`Scheme`] enum dispatches statically; [`Scheme::new`] builds one by
//! name from scenario parameters, and [`SCHEMES`] describes each (paper,
//! section, parameters with units and defaults) for `lbsim schemes`.

pub mod ag;
pub mod clairvoyant;
pub mod clove;
pub mod conga;
pub mod dre;
pub mod drill;
pub mod ecmp;
pub mod edge;
pub mod edge_flowlet;
pub mod edge_params;
pub mod expeditus;
pub mod flowlet;
pub mod hermes;
pub mod hula;
pub mod letflow;
pub mod mptcp;
pub mod params;
pub mod presto;
pub mod pst;
pub mod reseq;
pub mod spray;
#[cfg(test)]
pub(crate) mod testutil;
pub mod vms;

pub use params::{DefaultValue, ParamDef, ParamError, Params, Value};

use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, HostRx, LinkId, LoadBalancer, NodeId, PktId, PortId, Routing, Topology};
use std::collections::BTreeMap;

/// Bytes a scheme allocates up front in tables sized by the fabric or by
/// its parameters (`racks` leaves or ToRs with `uplinks` each, `nodes`
/// nodes of which `hosts` hosts): checked against the machine before
/// anything is built. Tables that grow with the traffic (flows, flowlets)
/// are not counted. `param` reads a numeric scheme parameter as the user
/// gave it; a value the scheme would refuse counts nothing here, so its
/// own error names it.
pub fn fabric_table_bytes(scheme: &str, hosts: u64, nodes: u64, racks: u64, uplinks: u64, param: impl Fn(&str) -> Option<f64>) -> u64 {
    let pairs = racks.saturating_mul(racks);
    let per = |n: u64, bytes: usize| n.saturating_mul(bytes as u64);
    let whole = |name: &str, default: f64, max: u64| {
        let x = param(name).unwrap_or(default);
        if x.fract() == 0.0 && (0.0..=max as f64).contains(&x) {
            x as u64
        } else {
            0
        }
    };
    match scheme {
        // a direct-mapped PST at each switch (at most; ToRs and aggregation
        // switches have one)
        "expeditus" | "clairvoyant" => per(nodes.saturating_sub(hosts).saturating_mul(whole("pst_entries", 0.0, pst::MAX_ENTRIES)), pst::SLOT_BYTES),
        // path state per (leaf, leaf, uplink) and per leaf pair, and each
        // leaf's train table
        "ag" => per(pairs.saturating_mul(uplinks), ag::PATH_STATE_BYTES)
            .saturating_add(per(pairs, ag::PAIR_STATE_BYTES))
            .saturating_add(per(racks.saturating_mul(whole("flow_table_size", 65536.0, ag::MAX_FLOW_TABLE)), ag::TRAIN_BYTES)),
        "conga" | "conga_flow" => per(pairs.saturating_mul(uplinks), conga::PATH_STATE_BYTES).saturating_add(per(pairs, conga::PAIR_STATE_BYTES)),
        "hula" => per(nodes.saturating_mul(racks), hula::BEST_HOP_BYTES),
        _ => 0,
    }
}

/// What [`fabric_table_bytes`] counts for `scheme`, for the error that
/// refuses a fabric.
pub fn fabric_table_kind(scheme: &str) -> &'static str {
    match scheme {
        "expeditus" | "clairvoyant" => "path-selection tables, lb.params.pst_entries slots per switch",
        "ag" => "per-leaf-pair and train tables",
        "hula" => "best-hop tables",
        _ => "per-leaf-pair tables",
    }
}

/// What a scheme may need to know when it is built.
pub struct SchemeEnv<'a> {
    pub topo: &'a Topology,
    /// Routes at time 0 (with the links failed at t = 0 down).
    pub routing: &'a Routing,
    /// Switch port buffer, bytes (a packet limit counts full-sized packets).
    pub switch_buffer_bytes: u64,
    /// TCP maximum segment size, bytes.
    pub mss: u32,
    /// Bytes of TCP/IP header on the wire per segment.
    pub header_bytes: u32,
    /// The RTT that "RTT"-denominated parameters mean: the scenario's
    /// `lb.rtt_us`, else the round-trip time of the longest host-to-host
    /// path in the idle network.
    pub base_rtt: SimTime,
}

/// A scheme's description for `lbsim schemes` and the docs.
pub struct SchemeInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Paper and section the implementation follows.
    pub follows: &'static str,
    /// Where it acts: "switch", "host edge", "source leaf", "transport".
    pub acts_at: &'static str,
    pub params: &'static [ParamDef],
}

/// Revisions of single schemes on top of the simulator's model revision
/// (`lbsim_sim::MODEL_REVISION`): a change that alters the results of one
/// scheme only bumps that scheme's entry here, so results catalogs re-run
/// only the runs that use it.
pub const SCHEME_REVISIONS: &[(&str, u32)] = &[
    // 1: reports age as CONGA §3.3 instead of being dropped after 1 ms;
    // 2: a flowlet moving off its path counts its own rate on the new one
    ("clove_int", 2),
    // 1: the relay reports every path with ecnSet set or clear (§4); a
    // path is congested from a marked report to an unmarked one (was: for
    // a fixed hold of 1 RTT after a mark)
    ("clove_ecn", 1),
    // 1: asymmetric fabrics split into symmetric components (DRILL §3.3);
    // results on symmetric fabrics unchanged
    ("drill", 1),
    // 1: a dead or unroutable plane or core never wins a tie; 2: with
    // response = "synack", a retransmitted SYN-ACK carries the response
    // again (eefbdc1; the default mode's results are unchanged)
    ("expeditus", 2),
    // 1: probes go to distinct random paths, and a probing round first
    // fits the pair's path state to a rediscovered path set (it indexed
    // past a shrunken set: a panic in AG Fig. 10's data-mining runs)
    ("hermes", 1),
    // 1: probes ride data packets only (§III), not ACKs; 2: per-leaf
    // timers (event counts change, flows do not) and the truth beside a
    // measurement is for the size of the packet that measured it
    ("ag", 2),
    // 1: flow state expires after state_idle_ms (persistent connections
    // idle longer come back single-channel); 2: when only rVMS's state
    // expired, it signals SIN so both ends are single-channel
    // 3: the resequencer starts at the SYN's sequence (it started at the
    // first data segment to arrive, passed earlier ones up out of order,
    // and the guest's duplicate ACKs Reset flows that lost nothing)
    // 4: T and S default to eq. 3's T'/2 and eq. 4's C'T for the fabric
    // (were 2 ms and 2.5 MB)
    ("vms", 4),
    // 1: with resequence = true, the same resequencer start
    ("spray", 1),
];

pub const SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "ecmp",
        summary: "Per-flow ECMP: each switch hashes the 5-tuple with a per-switch salt",
        follows: "baseline of every paper (RFC 2992 hash-threshold style; hash mod group size)",
        acts_at: "every switch",
        params: ecmp::PARAMS,
    },
    SchemeInfo {
        name: "spray",
        summary: "Per-packet spraying: random (RPS) or round-robin (DRB) next hop per packet",
        follows: "RPS (Dixit et al. 2013); VMS 'PerPacket', AG and CONGA §2.4 baselines",
        acts_at: "every switch",
        params: spray::PARAMS,
    },
    SchemeInfo {
        name: "drill",
        summary: "DRILL(d, m): per packet, the least occupied egress queue among d random candidates and m remembered ports; on an asymmetric fabric, per flow a symmetric component (in proportion to capacity), then DRILL inside it",
        follows: "Ghorbani et al., SIGCOMM 2017, §3 with the §3.3 decomposition for asymmetry (AG baseline); memory per candidate group (our choice)",
        acts_at: "every switch",
        params: drill::PARAMS,
    },
    SchemeInfo {
        name: "letflow",
        summary: "LetFlow: a random next hop per flowlet at every switch",
        follows: "Vanini et al., NSDI 2017 (Clove and AG baseline)",
        acts_at: "every switch",
        params: letflow::PARAMS,
    },
    SchemeInfo {
        name: "hula",
        summary: "HULA: ToR probes carry the best path utilisation hop by hop; every switch sends new flowlets to its best next hop per destination ToR",
        follows: "Katta et al., SOSR 2016, §3-4 (AG baseline: flowlet gap 500 us, probes every 200 us); replicate only on a table update (our choice)",
        acts_at: "every switch (probes originate at ToRs)",
        params: hula::PARAMS,
    },
    SchemeInfo {
        name: "conga",
        summary: "CONGA: flowlets to the uplink minimising max(local DRE, remote path metric), leaf-to-leaf feedback",
        follows: "Alizadeh et al., SIGCOMM 2014, §3 (DRE §3.2, feedback §3.3, flowlets §3.4, decision §3.5, defaults §3.6)",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::PARAMS,
    },
    SchemeInfo {
        name: "conga_flow",
        summary: "CONGA-Flow: CONGA with T_fl = 13 ms, about one decision per flow",
        follows: "Alizadeh et al., SIGCOMM 2014, §5 'Schemes compared'",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::FLOW_PARAMS,
    },
    SchemeInfo {
        name: "expeditus",
        summary: "Expeditus: per-flow two-stage path selection in 3-tier Clos (stage 1: source ToR egress and destination ToR ingress metrics pick the aggregation plane; stage 2: an Exp-response carries the destination pod's core ingress metrics to the source pod's aggregation switch, which picks the core); one stage inside a pod or in leaf-spine",
        follows: "Wang, Xu, Niu, Han, Expeditus, §3 (Alg. 1-2, failures §3.3, granularity §3.4); choices in docs/schemes/expeditus.md §3",
        acts_at: "ToRs and aggregation switches",
        params: expeditus::PARAMS,
    },
    SchemeInfo {
        name: "clairvoyant",
        summary: "Clairvoyant: an oracle source ToR that reads every hop's egress DRE on every path at each flow's first packet and pins the best path at once",
        follows: "Expeditus §6.1 'Clairvoyant' (same meters as expeditus; zero-latency oracle, both directions)",
        acts_at: "source ToR (oracle), aggregation switches follow its entries",
        params: clairvoyant::PARAMS,
    },
    SchemeInfo {
        name: "ag",
        summary: "AG: per-flow packet trains on random uplinks; the source leaf sizes trains with the model of eqs. (1)-(7) from leaf-to-leaf one-way delays measured by probes riding on data",
        follows: "Liu et al., AG (2019), §III-V; exhaustive search of the model by default (the paper's bisection misses the argmax where r is not unimodal)",
        acts_at: "leaves (spines: ECMP)",
        params: ag::PARAMS,
    },
    SchemeInfo {
        name: "edge_flowlet",
        summary: "Edge-Flowlet: the source hypervisor gives each flowlet a new outer source port (random over discovered paths, or hashed)",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.2 and §5",
        acts_at: "host edge (hypervisor)",
        params: edge_flowlet::PARAMS,
    },
    SchemeInfo {
        name: "clove_ecn",
        summary: "Clove-ECN: flowlets by weighted round robin over discovered paths; the receiver relays each path's ecnSet bit (set or clear); a marked report cuts the path's weight by 1/3 and marks it congested until an unmarked one",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.1-3.2, §4",
        acts_at: "host edge (hypervisor); switches mark ECN",
        params: clove::ECN_PARAMS,
    },
    SchemeInfo {
        name: "clove_int",
        summary: "Clove-INT: switches stamp max egress utilisation (INT); each flowlet takes the least-utilised discovered path (our choice: a flowlet leaving its path adds its own recent rate to the other paths' reports)",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.2 'Clove-INT'",
        acts_at: "host edge (hypervisor); switches write INT",
        params: clove::INT_PARAMS,
    },
    SchemeInfo {
        name: "hermes",
        summary: "Hermes: the source edge types paths good/gray/bad from RTT, relayed ECN and loss (plus active probes); new flows to the good path with fewest flows; a large slow flow on a bad path is rerouted cautiously",
        follows: "Zhang et al., SIGCOMM 2017 (AG baseline: S = 600 KB, R = 30 %); thresholds in RTTs scaled from the authors' ns-3 defaults (our choice); per destination host; no failure detection",
        acts_at: "host edge (hypervisor); switches mark ECN",
        params: hermes::PARAMS,
    },
    SchemeInfo {
        name: "presto",
        summary: "Presto: 64 KB flowcells round-robin over discovered paths (optionally weighted); receiver reassembles flowcells in order",
        follows: "He et al., SIGCOMM 2015, as adapted to L3 ECMP in Clove §5",
        acts_at: "host edge (both ends)",
        params: presto::PARAMS,
    },
    SchemeInfo {
        name: "vms",
        summary: "VMS: the sender's virtual switch spreads a TCP flow over N source-port channels with DCTCP-like virtual windows fed back by the receiver's; the guest's window is capped at their sum; the receiver resequences; a loss falls back to one channel",
        follows: "Li et al., VMS, §III (Algorithms 1-2, Reset §III-G, resequencing §III-C); choices in docs/schemes/vms.md §2 (Q1-Q16)",
        acts_at: "host edge (both virtual switches)",
        params: vms::PARAMS,
    },
    SchemeInfo {
        name: "mptcp",
        summary: "MPTCP: n subflows on distinct ports over ECMP, LIA coupled increase, lowest-RTT scheduler, connection-level reassembly",
        follows: "RFC 6356 (LIA), Wischik et al. NSDI 2011; CONGA §5 (8 subflows), Clove §5 (4 subflows)",
        acts_at: "transport (hosts); switches: ECMP",
        params: mptcp::PARAMS,
    },
];

/// Default switch ECN threshold a scheme needs when the scenario sets none
/// (Clove-ECN: 20 packets, §3.2; Hermes: the same, our choice).
pub fn default_ecn_k_pkts(scheme: &str) -> Option<u32> {
    matches!(scheme, "clove_ecn" | "hermes").then_some(20)
}

/// One sample of a scheme's state for `metrics.scheme_sample_interval_us`:
/// (time, metric name, two indices whose meaning the metric defines, value).
/// AG: ("granularity_pkts" | "congested_paths" | "owd_us", source leaf,
/// destination leaf, or path index for "owd_us" with b = dst*64 + path).
pub type SchemeSample = (SimTime, &'static str, u32, u32, f64);

/// A load-balancing scheme, dispatched by `match`.
pub enum Scheme {
    Ecmp(ecmp::Ecmp),
    Spray(spray::Spray),
    LetFlow(letflow::LetFlow),
    Drill(drill::Drill),
    Ag(Box<ag::Ag>),
    Hula(Box<hula::Hula>),
    Conga(Box<conga::Conga>),
    Expeditus(Box<expeditus::Expeditus>),
    Clairvoyant(Box<clairvoyant::Clairvoyant>),
    EdgeFlowlet(Box<edge_flowlet::EdgeFlowlet>),
    Clove(Box<clove::Clove>),
    Presto(Box<presto::Presto>),
    Hermes(Box<hermes::Hermes>),
    Vms(Box<vms::Vms>),
    Mptcp(mptcp::Mptcp),
}

impl Scheme {
    /// Builds scheme `name` from its scenario parameters.
    pub fn new(name: &str, given: &BTreeMap<String, Value>, env: &SchemeEnv) -> Result<Scheme, ParamError> {
        let info = SCHEMES.iter().find(|s| s.name == name).ok_or_else(|| ParamError {
            key: "scheme".into(),
            msg: format!("unknown scheme {name:?}; known: {}", SCHEMES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")),
        })?;
        let p = Params::new(given, info.params, name)?;
        Ok(match name {
            "ecmp" => Scheme::Ecmp(ecmp::Ecmp),
            "spray" => Scheme::Spray(spray::Spray::new(&p, env.topo)?),
            "letflow" => Scheme::LetFlow(letflow::LetFlow::new(&p, env.topo.nodes.len())?),
            "drill" => Scheme::Drill(drill::Drill::new(&p, env)?),
            "ag" => Scheme::Ag(Box::new(ag::Ag::new(&p, env)?)),
            "hula" => Scheme::Hula(Box::new(hula::Hula::new(&p, env)?)),
            "conga" | "conga_flow" => Scheme::Conga(Box::new(conga::Conga::new(&p, env.topo)?)),
            "expeditus" => Scheme::Expeditus(Box::new(expeditus::Expeditus::new(&p, env)?)),
            "clairvoyant" => Scheme::Clairvoyant(Box::new(clairvoyant::Clairvoyant::new(&p, env)?)),
            "edge_flowlet" => Scheme::EdgeFlowlet(Box::new(edge_flowlet::EdgeFlowlet::new(&p, env)?)),
            "clove_ecn" => Scheme::Clove(Box::new(clove::Clove::new(&p, env, false)?)),
            "clove_int" => Scheme::Clove(Box::new(clove::Clove::new(&p, env, true)?)),
            "vms" => Scheme::Vms(Box::new(vms::Vms::new(&p, env)?)),
            "hermes" => Scheme::Hermes(Box::new(hermes::Hermes::new(&p, env)?)),
            "presto" => Scheme::Presto(Box::new(presto::Presto::new(&p, env, given)?)),
            "mptcp" => Scheme::Mptcp(mptcp::Mptcp::new(&p)?),
            _ => unreachable!("scheme {name} listed but not constructed"),
        })
    }

    /// The scheme's time constants as resolved from its parameters (µs),
    /// e.g. the RTT its "RTT" parameters mean and the flowlet gap.
    pub fn resolved(&self) -> Vec<(&'static str, f64)> {
        match self {
            Scheme::EdgeFlowlet(s) => s.resolved.clone(),
            Scheme::Clove(s) => s.resolved.clone(),
            Scheme::Hermes(s) => s.resolved.clone(),
            Scheme::Vms(s) => s.resolved.clone(),
            _ => vec![],
        }
    }

    /// Where an edge scheme's flowlets and bytes went (per spine/core).
    pub fn path_use(&self) -> Option<&edge::PathUse> {
        match self {
            Scheme::EdgeFlowlet(s) => s.discovery().map(|_| &s.path_use),
            Scheme::Clove(s) => Some(&s.path_use),
            Scheme::Hermes(s) => Some(&s.path_use),
            _ => None,
        }
    }

    /// CONGA: per leaf uplink, remote metrics received for its tag and their mean.
    pub fn remote_by_uplink(&self) -> Option<Vec<(PortId, u64, f64)>> {
        match self {
            Scheme::Conga(s) => Some(s.remote_by_uplink()),
            _ => None,
        }
    }

    /// HULA: per ToR and destination ToR (rack index), the best next hop
    /// and the path utilisation (fraction of capacity) it was learnt with.
    pub fn best_hops(&self) -> Option<Vec<(NodeId, u32, PortId, f64)>> {
        match self {
            Scheme::Hula(s) => Some(s.tor_best_hops()),
            _ => None,
        }
    }

    /// Appends the scheme's state now (time filled in by the caller);
    /// `ctx` lets a scheme report simulator truth beside its own view.
    pub fn sample(&self, ctx: &Ctx, out: &mut Vec<SchemeSample>) {
        match self {
            Scheme::Ag(s) => s.sample(ctx, out),
            Scheme::Vms(s) => s.sample(out),
            _ => {}
        }
    }

    /// Scheme state tables for the summary: (section, row, column, value)
    /// becomes `scheme.<section>.<row>.<column> = value`.
    pub fn tables(&self, topo: &Topology) -> Vec<(&'static str, String, String, f64)> {
        match self {
            Scheme::Ag(s) => s.tables(topo),
            _ => vec![],
        }
    }

    /// MPTCP subflows per connection, when the transport is MPTCP.
    pub fn mptcp_subflows(&self) -> Option<u32> {
        match self {
            Scheme::Mptcp(m) => Some(m.subflows),
            _ => None,
        }
    }

    /// The path discovery state, for schemes that discover paths.
    pub fn discovery(&self) -> Option<&edge::Discovery> {
        match self {
            Scheme::EdgeFlowlet(s) => s.discovery(),
            Scheme::Clove(s) => Some(s.discovery()),
            Scheme::Presto(s) => Some(s.discovery()),
            Scheme::Hermes(s) => Some(s.discovery()),
            _ => None,
        }
    }

    /// How paths are discovered, for schemes that discover them.
    pub fn discovery_mode(&self) -> Option<&'static str> {
        let d = self.discovery()?;
        Some(match d.p.mode {
            edge::DiscoveryMode::Probe => "probe (traceroute packets)",
            edge::DiscoveryMode::Oracle => "oracle (read from routing state)",
        })
    }
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Scheme::Ecmp($s) => $e,
            Scheme::Spray($s) => $e,
            Scheme::LetFlow($s) => $e,
            Scheme::Drill($s) => $e,
            Scheme::Ag($s) => $e,
            Scheme::Hula($s) => $e,
            Scheme::Conga($s) => $e,
            Scheme::Expeditus($s) => $e,
            Scheme::Clairvoyant($s) => $e,
            Scheme::EdgeFlowlet($s) => $e,
            Scheme::Clove($s) => $e,
            Scheme::Presto($s) => $e,
            Scheme::Hermes($s) => $e,
            Scheme::Vms($s) => $e,
            Scheme::Mptcp($s) => $e,
        }
    };
}

impl LoadBalancer for Scheme {
    fn start(&mut self, ctx: &mut Ctx) {
        dispatch!(self, s => s.start(ctx))
    }
    #[inline]
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        dispatch!(self, s => s.on_host_send(ctx, host, pkt))
    }
    #[inline]
    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        dispatch!(self, s => s.on_host_receive(ctx, host, pkt))
    }
    #[inline]
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId, c: &[PortId]) -> Forward {
        dispatch!(self, s => s.on_switch(ctx, sw, in_port, pkt, c))
    }
    fn on_switch_control(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId) -> Forward {
        dispatch!(self, s => s.on_switch_control(ctx, sw, in_port, pkt))
    }
    #[inline]
    fn wants_enqueue(&self) -> bool {
        dispatch!(self, s => s.wants_enqueue())
    }
    fn wants_host_hooks(&self) -> bool {
        dispatch!(self, s => s.wants_host_hooks())
    }
    fn wants_switch_hook(&self) -> bool {
        dispatch!(self, s => s.wants_switch_hook())
    }
    #[inline]
    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        dispatch!(self, s => s.on_enqueue(ctx, port, pkt))
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        dispatch!(self, s => s.on_timer(ctx, token))
    }
    fn on_link_change(&mut self, ctx: &mut Ctx, link: LinkId, up: bool) {
        dispatch!(self, s => s.on_link_change(ctx, link, up))
    }
    fn stats(&self) -> Vec<(&'static str, f64)> {
        dispatch!(self, s => s.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;

    /// A scheme that says it has no host hooks must do nothing in them: 200
    /// packets of different flows go through both hooks of each such scheme,
    /// and the packet, the actions and the receive decision stay as if the
    /// hooks were skipped (which the simulator then does). State a hook
    /// might keep is checked end to end in lbsim-sim
    /// (`skipping_the_hooks_of_schemes_without_them_changes_nothing`).
    #[test]
    fn schemes_without_host_hooks_do_nothing_in_them() {
        let mut env = Env::testbed();
        let (mut with, mut without) = (vec![], 0);
        for info in SCHEMES {
            let mut s = Scheme::new(info.name, &BTreeMap::new(), &env.scheme_env()).unwrap();
            if s.wants_host_hooks() {
                with.push(info.name);
                continue;
            }
            without += 1;
            for i in 0..200u32 {
                let (src, dst) = (i % 16, 16 + (i * 7) % 16);
                let pkt = env.packet(src, dst, 1500);
                let before = format!("{:?}", env.pkts.get(pkt.0));
                let (hs, hd, now) = (env.topo.host(src), env.topo.host(dst), SimTime::from_us(i as u64 * 3));
                s.on_host_send(&mut env.ctx(now), hs, pkt);
                let rx = s.on_host_receive(&mut env.ctx(now), hd, pkt);
                assert!(matches!(rx, HostRx::Deliver), "{}", info.name);
                assert!(env.actions.is_empty(), "{}", info.name);
                assert_eq!(format!("{:?}", env.pkts.get(pkt.0)), before, "{}", info.name);
            }
        }
        // the edge schemes keep theirs
        for name in ["spray", "presto", "edge_flowlet", "clove_ecn", "clove_int", "hermes", "vms"] {
            assert!(with.contains(&name), "{name}: {with:?}");
        }
        assert!(without >= 10, "{without}");
    }

    /// A scheme that says it has no switch hook must choose as ECMP does
    /// (the simulator then picks by ECMP itself): 200 packets of different
    /// flows at every switch with a route to their destination get the
    /// ECMP port, no action, and leave the packet as it was. End to end:
    /// `skipping_the_hooks_of_schemes_without_them_changes_nothing`.
    #[test]
    fn schemes_without_a_switch_hook_choose_as_ecmp() {
        let mut env = Env::testbed();
        let mut without = vec![];
        for info in SCHEMES {
            let mut s = Scheme::new(info.name, &BTreeMap::new(), &env.scheme_env()).unwrap();
            if s.wants_switch_hook() {
                continue;
            }
            without.push(info.name);
            let mut hops = 0;
            for i in 0..200u32 {
                let (src, dst) = (i % 16, 16 + (i * 7) % 16);
                let pkt = env.packet(src, dst, 1500);
                let before = format!("{:?}", env.pkts.get(pkt.0));
                for n in 0..env.topo.nodes.len() as u32 {
                    let sw = NodeId(n);
                    if env.topo.is_host(sw) || env.routing.next_hops(sw, dst).is_empty() {
                        continue;
                    }
                    let c = env.routing.next_hops(sw, dst).to_vec();
                    let want = env.ctx(SimTime::ZERO).ecmp(sw, pkt, &c);
                    assert_eq!(s.on_switch(&mut env.ctx(SimTime::ZERO), sw, c[0], pkt, &c), Forward::Port(want), "{}", info.name);
                    assert!(env.actions.is_empty(), "{}", info.name);
                    assert_eq!(format!("{:?}", env.pkts.get(pkt.0)), before, "{}", info.name);
                    hops += 1;
                }
            }
            assert!(hops >= 200 * 3, "{}: {hops}", info.name);
        }
        for name in ["ecmp", "clove_ecn", "presto", "hermes", "vms", "mptcp"] {
            assert!(without.contains(&name), "{name}: {without:?}");
        }
    }

    /// Each scheme reports its own counters through the trait: a fresh
    /// LetFlow has counted no flowlets, Presto names its flowcells and its
    /// path discovery's probes, and ECMP counts nothing.
    #[test]
    fn schemes_report_their_own_stats() {
        let env = Env::testbed();
        let stats = |name: &str| Scheme::new(name, &BTreeMap::new(), &env.scheme_env()).unwrap().stats();
        assert_eq!(stats("letflow"), vec![("flowlets", 0.0)]);
        let names: Vec<&str> = stats("presto").iter().map(|x| x.0).collect();
        assert_eq!(names, ["flowcells", "packets_held", "reassembly_timeouts", "probe_packets", "discovery_rounds"]);
        assert!(stats("ecmp").is_empty());
        assert!(stats("mptcp").is_empty());
    }
}
