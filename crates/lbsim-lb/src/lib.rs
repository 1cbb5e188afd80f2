//! # lbsim-lb
//!
//! The load-balancing schemes, one file each, all implementing
//! [`lbsim_net::LoadBalancer`] (the smoltcp `congestion/` layout). The
//! [`Scheme`] enum dispatches statically. What the rest of the simulator
//! knows about a scheme is its row in [`SCHEMES`] (a [`SchemeInfo`]): the
//! description for `lbsim schemes` (paper, section, parameters with units
//! and defaults), what it changes in what the hosts' transport receives,
//! its revision, its default ECN threshold, the tables it allocates up
//! front, and its constructor, which [`Scheme::new`] calls by name. Adding
//! a scheme is its file, a `Scheme` variant and a row.

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

pub use params::{DefaultValue, ParamDef, ParamError, Params, Value, GUEST_SEES_CE};

use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, HostRx, LinkId, LoadBalancer, NodeId, PktId, PortId, ReportTable, Routing, Topology};
use std::collections::BTreeMap;

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

/// What the simulator knows about a scheme beside its code: one row of
/// [`SCHEMES`], read by `lbsim schemes` and the docs, the scenario checks,
/// the network's setup, the model revision and [`Scheme::new`].
pub struct SchemeInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Paper and section the implementation follows.
    pub follows: &'static str,
    /// Where it acts: "switch", "host edge", "source leaf", "transport".
    pub acts_at: &'static str,
    pub params: &'static [ParamDef],
    /// What it changes in what the hosts' transport receives.
    pub guest: GuestView,
    /// The scheme's revision on top of the simulator's model revision
    /// (`lbsim_sim::MODEL_REVISION`), 0 for none: a change that alters the
    /// results of this scheme only bumps it, so results catalogs re-run only
    /// the runs that use it.
    pub revision: u32,
    /// Switch ECN threshold (packets) the scheme needs when the scenario
    /// sets none.
    pub ecn_k_pkts: Option<u32>,
    /// Tables the scheme allocates up front, sized by the fabric or by its
    /// parameters.
    pub tables: Option<FabricTables>,
    /// Builds the scheme from its checked parameters (and the given ones,
    /// for a scheme that tells a default from a value set to it).
    pub build: Build,
}

/// What a scheme changes in what the hosts' transport receives, beyond
/// the paths and timing of its packets: listed by `lbsim schemes`, and read
/// for the note `validate`, `run` and `compare` print when the scheme
/// clears CE before an ECN-driven transport (DCTCP) sees it.
#[derive(Clone, Copy, Debug)]
pub struct GuestView {
    /// Each change, as `lbsim schemes` lists it (empty: none).
    pub changes: &'static [&'static str],
    /// The boolean parameter ([`GUEST_SEES_CE`]) with which CE marks reach
    /// the receiving host's transport; while it is false the scheme clears
    /// them first. None: the scheme never clears CE.
    pub ce_unless: Option<&'static str>,
    /// What an ECN-driven sender hears of the marks while they are cleared.
    pub instead: &'static str,
}

/// A scheme that changes nothing the transport receives.
const UNCHANGED: GuestView = GuestView { changes: &[], ce_unless: None, instead: "" };

impl SchemeInfo {
    /// Whether the scheme, with the parameters `given` (as the scenario
    /// gives them), clears CE before the receiving host's transport sees it.
    pub fn clears_ce(&self, given: &BTreeMap<String, Value>) -> Result<bool, ParamError> {
        match self.guest.ce_unless {
            Some(p) => Ok(!Params::new(given, self.params, self.name)?.boolean(p)?),
            None => Ok(false),
        }
    }
}

/// A scheme's constructor, from its checked parameters, what it may need
/// to know and the parameters as given.
pub type Build = fn(&Params, &SchemeEnv, &BTreeMap<String, Value>) -> Result<Scheme, ParamError>;

/// Reads a numeric scheme parameter as the user gave it.
pub type NumParam<'a> = dyn Fn(&str) -> Option<f64> + 'a;

/// The row of scheme `name`, if there is one.
pub fn scheme_info(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

/// The size of a fabric, as [`FabricTables::bytes`] reads it: `racks`
/// leaves or ToRs with `uplinks` each, `nodes` nodes of which `hosts` hosts.
#[derive(Clone, Copy, Debug)]
pub struct FabricSize {
    pub hosts: u64,
    pub nodes: u64,
    pub racks: u64,
    pub uplinks: u64,
}

/// Tables a scheme allocates up front, sized by the fabric or by its
/// parameters: checked against the machine before anything is built.
/// Tables that grow with the traffic (flows, flowlets) are not counted.
pub struct FabricTables {
    /// What they are, for the error that refuses a fabric.
    pub kind: &'static str,
    /// Their bytes on a fabric; the function reads a numeric scheme
    /// parameter as the user gave it. A value the scheme would refuse counts
    /// nothing here, so its own error names it.
    pub bytes: fn(FabricSize, &NumParam<'_>) -> u64,
}

/// `n` entries of `bytes` each, saturating.
fn per(n: u64, bytes: usize) -> u64 {
    n.saturating_mul(bytes as u64)
}

/// Parameter `name` as a whole number up to `max` (its default if not
/// given), or 0 if it is not one.
fn whole(param: &NumParam<'_>, name: &str, default: f64, max: u64) -> u64 {
    let x = param(name).unwrap_or(default);
    if x.fract() == 0.0 && (0.0..=max as f64).contains(&x) {
        x as u64
    } else {
        0
    }
}

/// Expeditus and Clairvoyant: a direct-mapped PST at each switch (at most;
/// ToRs and aggregation switches have one).
const PST_TABLES: FabricTables = FabricTables {
    kind: "path-selection tables, lb.params.pst_entries slots per switch",
    bytes: |f, param| per(f.nodes.saturating_sub(f.hosts).saturating_mul(whole(param, "pst_entries", 0.0, pst::MAX_ENTRIES)), pst::SLOT_BYTES),
};

/// AG: path state per (leaf, leaf, uplink) and per leaf pair, and each
/// leaf's train table.
const AG_TABLES: FabricTables = FabricTables {
    kind: "per-leaf-pair and train tables",
    bytes: |f, param| {
        let pairs = f.racks.saturating_mul(f.racks);
        per(pairs.saturating_mul(f.uplinks), ag::PATH_STATE_BYTES)
            .saturating_add(per(pairs, ag::PAIR_STATE_BYTES))
            .saturating_add(per(f.racks.saturating_mul(whole(param, "flow_table_size", 65536.0, ag::MAX_FLOW_TABLE)), ag::TRAIN_BYTES))
    },
};

/// CONGA: path state per (leaf, leaf, uplink) and per leaf pair.
const CONGA_TABLES: FabricTables = FabricTables {
    kind: "per-leaf-pair tables",
    bytes: |f, _| {
        let pairs = f.racks.saturating_mul(f.racks);
        per(pairs.saturating_mul(f.uplinks), conga::PATH_STATE_BYTES).saturating_add(per(pairs, conga::PAIR_STATE_BYTES))
    },
};

/// HULA: a best hop per (node, destination ToR).
const HULA_TABLES: FabricTables = FabricTables { kind: "best-hop tables", bytes: |f, _| per(f.nodes.saturating_mul(f.racks), hula::BEST_HOP_BYTES) };

/// Bytes scheme `scheme` allocates up front in tables sized by the fabric
/// or by its parameters (its row's [`FabricTables`]; 0 for a scheme without
/// any, or an unknown name). `param` reads a numeric scheme parameter as
/// the user gave it.
pub fn fabric_table_bytes(scheme: &str, hosts: u64, nodes: u64, racks: u64, uplinks: u64, param: impl Fn(&str) -> Option<f64>) -> u64 {
    match scheme_info(scheme).and_then(|s| s.tables.as_ref()) {
        Some(t) => (t.bytes)(FabricSize { hosts, nodes, racks, uplinks }, &param),
        None => 0,
    }
}

/// What [`fabric_table_bytes`] counts for `scheme`, for the error that
/// refuses a fabric.
pub fn fabric_table_kind(scheme: &str) -> &'static str {
    scheme_info(scheme).and_then(|s| s.tables.as_ref()).map_or("no tables", |t| t.kind)
}

/// Every scheme, one row each, in the order `lbsim schemes` lists them.
pub static SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "ecmp",
        summary: "Per-flow ECMP: each switch hashes the 5-tuple with a per-switch salt",
        follows: "baseline of every paper (RFC 2992 hash-threshold style; hash mod group size)",
        acts_at: "every switch",
        params: ecmp::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: None,
        build: |_, _, _| Ok(Scheme::Ecmp(ecmp::Ecmp)),
    },
    SchemeInfo {
        name: "spray",
        summary: "Per-packet spraying: random (RPS) or round-robin (DRB) next hop per packet",
        follows: "RPS (Dixit et al. 2013); VMS 'PerPacket', AG and CONGA §2.4 baselines",
        acts_at: "every switch",
        params: spray::PARAMS,
        guest: GuestView { changes: &["with resequence = true, the receiving host resequences packets before its transport"], ce_unless: None, instead: "" },
        // 1: with resequence = true, the same resequencer start
        revision: 1,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::Spray(spray::Spray::new(p, env.topo)?)),
    },
    SchemeInfo {
        name: "drill",
        summary: "DRILL(d, m): per packet, the least occupied egress queue among d random candidates and m remembered ports; on an asymmetric fabric, per flow a symmetric component (in proportion to capacity), then DRILL inside it",
        follows: "Ghorbani et al., SIGCOMM 2017, §3 with the §3.3 decomposition for asymmetry (AG baseline); memory per candidate group (our choice)",
        acts_at: "every switch",
        params: drill::PARAMS,
        guest: UNCHANGED,
        // 1: asymmetric fabrics split into symmetric components (DRILL §3.3);
        // results on symmetric fabrics unchanged
        revision: 1,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::Drill(drill::Drill::new(p, env)?)),
    },
    SchemeInfo {
        name: "letflow",
        summary: "LetFlow: a random next hop per flowlet at every switch",
        follows: "Vanini et al., NSDI 2017 (Clove and AG baseline)",
        acts_at: "every switch",
        params: letflow::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::LetFlow(letflow::LetFlow::new(p, env.topo.nodes.len())?)),
    },
    SchemeInfo {
        name: "hula",
        summary: "HULA: ToR probes carry the best path utilisation hop by hop; every switch sends new flowlets to its best next hop per destination ToR",
        follows: "Katta et al., SOSR 2016, §3-4 (AG baseline: flowlet gap 500 us, probes every 200 us); replicate only on a table update (our choice)",
        acts_at: "every switch (probes originate at ToRs)",
        params: hula::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: Some(HULA_TABLES),
        build: |p, env, _| Ok(Scheme::Hula(Box::new(hula::Hula::new(p, env)?))),
    },
    SchemeInfo {
        name: "conga",
        summary: "CONGA: flowlets to the uplink minimising max(local DRE, remote path metric), leaf-to-leaf feedback",
        follows: "Alizadeh et al., SIGCOMM 2014, §3 (DRE §3.2, feedback §3.3, flowlets §3.4, decision §3.5, defaults §3.6)",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: Some(CONGA_TABLES),
        build: |p, env, _| Ok(Scheme::Conga(Box::new(conga::Conga::new(p, env.topo)?))),
    },
    SchemeInfo {
        name: "conga_flow",
        summary: "CONGA-Flow: CONGA with T_fl = 13 ms, about one decision per flow",
        follows: "Alizadeh et al., SIGCOMM 2014, §5 'Schemes compared'",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::FLOW_PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: Some(CONGA_TABLES),
        build: |p, env, _| Ok(Scheme::Conga(Box::new(conga::Conga::new(p, env.topo)?))),
    },
    SchemeInfo {
        name: "expeditus",
        summary: "Expeditus: per-flow two-stage path selection in 3-tier Clos (stage 1: source ToR egress and destination ToR ingress metrics pick the aggregation plane; stage 2: an Exp-response carries the destination pod's core ingress metrics to the source pod's aggregation switch, which picks the core); one stage inside a pod or in leaf-spine",
        follows: "Wang, Xu, Niu, Han, Expeditus, §3 (Alg. 1-2, failures §3.3, granularity §3.4); choices in docs/schemes/expeditus.md §3",
        acts_at: "ToRs and aggregation switches",
        params: expeditus::PARAMS,
        guest: UNCHANGED,
        // 1: a dead or unroutable plane or core never wins a tie; 2: with
        // response = "synack", a retransmitted SYN-ACK carries the response
        // again (eefbdc1; the default mode's results are unchanged)
        revision: 2,
        ecn_k_pkts: None,
        tables: Some(PST_TABLES),
        build: |p, env, _| Ok(Scheme::Expeditus(Box::new(expeditus::Expeditus::new(p, env)?))),
    },
    SchemeInfo {
        name: "clairvoyant",
        summary: "Clairvoyant: an oracle source ToR that reads every hop's egress DRE on every path at each flow's first packet and pins the best path at once",
        follows: "Expeditus §6.1 'Clairvoyant' (same meters as expeditus; zero-latency oracle, both directions)",
        acts_at: "source ToR (oracle), aggregation switches follow its entries",
        params: clairvoyant::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: Some(PST_TABLES),
        build: |p, env, _| Ok(Scheme::Clairvoyant(Box::new(clairvoyant::Clairvoyant::new(p, env)?))),
    },
    SchemeInfo {
        name: "ag",
        summary: "AG: per-flow packet trains on random uplinks; the source leaf sizes trains with the model of eqs. (1)-(7) from leaf-to-leaf one-way delays measured by probes riding on data",
        follows: "Liu et al., AG (2019), §III-V; exhaustive search of the model by default (the paper's bisection misses the argmax where r is not unimodal)",
        acts_at: "leaves (spines: ECMP)",
        params: ag::PARAMS,
        guest: UNCHANGED,
        // 1: probes ride data packets only (§III), not ACKs; 2: per-leaf
        // timers (event counts change, flows do not) and the truth beside a
        // measurement is for the size of the packet that measured it
        revision: 2,
        ecn_k_pkts: None,
        tables: Some(AG_TABLES),
        build: |p, env, _| Ok(Scheme::Ag(Box::new(ag::Ag::new(p, env)?))),
    },
    SchemeInfo {
        name: "edge_flowlet",
        summary: "Edge-Flowlet: the source hypervisor gives each flowlet a new outer source port (random over discovered paths, or hashed)",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.2 and §5",
        acts_at: "host edge (hypervisor)",
        params: edge_flowlet::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::EdgeFlowlet(Box::new(edge_flowlet::EdgeFlowlet::new(p, env)?))),
    },
    SchemeInfo {
        name: "clove_ecn",
        summary: "Clove-ECN: flowlets by weighted round robin over discovered paths; the receiver relays each path's ecnSet bit (set or clear); a marked report cuts the path's weight by 1/3 and marks it congested until an unmarked one",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.1-3.2, §4",
        acts_at: "host edge (hypervisor); switches mark ECN",
        params: clove::ECN_PARAMS,
        guest: GuestView {
            changes: &[
                "with guest_sees_ce = false (the default, §4), the receiving edge clears CE before the guest sees it",
                "with guest_sees_ce = false, the sending edge sets ECE on the ACKs it passes to the guest only while every path to that destination is congested, and clears it otherwise (§3.2)",
            ],
            ce_unless: Some(GUEST_SEES_CE),
            instead: "its senders see ECE only while every path to the destination is congested (Clove §3.2), so they rarely react to marks",
        },
        // 1: the relay reports every path with ecnSet set or clear (§4); a
        // path is congested from a marked report to an unmarked one (was: for
        // a fixed hold of 1 RTT after a mark)
        revision: 1,
        // Clove §3.2
        ecn_k_pkts: Some(20),
        tables: None,
        build: |p, env, _| Ok(Scheme::Clove(Box::new(clove::Clove::new(p, env, false)?))),
    },
    SchemeInfo {
        name: "clove_int",
        summary: "Clove-INT: switches stamp max egress utilisation (INT); each flowlet takes the least-utilised discovered path (our choice: a flowlet leaving its path adds its own recent rate to the other paths' reports)",
        follows: "Katta et al. (Clove), CoNEXT 2017, §3.2 'Clove-INT'",
        acts_at: "host edge (hypervisor); switches write INT",
        params: clove::INT_PARAMS,
        guest: UNCHANGED,
        // 1: reports age as CONGA §3.3 instead of being dropped after 1 ms;
        // 2: a flowlet moving off its path counts its own rate on the new one
        revision: 2,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::Clove(Box::new(clove::Clove::new(p, env, true)?))),
    },
    SchemeInfo {
        name: "hermes",
        summary: "Hermes: the source edge types paths good/gray/bad from RTT, relayed ECN and loss (plus active probes); new flows to the good path with fewest flows; a large slow flow on a bad path is rerouted cautiously",
        follows: "Zhang et al., SIGCOMM 2017 (AG baseline: S = 600 KB, R = 30 %); thresholds in RTTs scaled from the authors' ns-3 defaults (our choice); per destination host; no failure detection",
        acts_at: "host edge (hypervisor); switches mark ECN",
        params: hermes::PARAMS,
        guest: GuestView {
            changes: &["with guest_sees_ce = false, the receiving edge clears CE before the host's transport sees it (the default lets it through, as the authors' simulator does)"],
            ce_unless: Some(GUEST_SEES_CE),
            instead: "its senders never see ECE and never react to marks (Hermes itself still reads them)",
        },
        // 1: probes go to distinct random paths, and a probing round first
        // fits the pair's path state to a rediscovered path set (it indexed
        // past a shrunken set: a panic in AG Fig. 10's data-mining runs)
        // 2: CE reaches the receiving host's transport by default
        // (guest_sees_ce = true, as the authors' simulator); it was cleared.
        // Runs whose transport ignores ECN are unchanged
        revision: 2,
        // Clove-ECN's (our choice)
        ecn_k_pkts: Some(20),
        tables: None,
        build: |p, env, _| Ok(Scheme::Hermes(Box::new(hermes::Hermes::new(p, env)?))),
    },
    SchemeInfo {
        name: "presto",
        summary: "Presto: 64 KB flowcells round-robin over discovered paths (optionally weighted); receiver reassembles flowcells in order",
        follows: "He et al., SIGCOMM 2015, as adapted to L3 ECMP in Clove §5",
        acts_at: "host edge (both ends)",
        params: presto::PARAMS,
        guest: GuestView { changes: &["with reassembly = true (the default), the receiving edge puts flowcells back in order before the transport, holding packets up to reassembly_timeout_us"], ce_unless: None, instead: "" },
        revision: 0,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, given| Ok(Scheme::Presto(Box::new(presto::Presto::new(p, env, given)?))),
    },
    SchemeInfo {
        name: "vms",
        summary: "VMS: the sender's virtual switch spreads a TCP flow over N source-port channels with DCTCP-like virtual windows fed back by the receiver's; the guest's window is capped at their sum; the receiver resequences; a loss falls back to one channel",
        follows: "Li et al., VMS, §III (Algorithms 1-2, Reset §III-G, resequencing §III-C); choices in docs/schemes/vms.md §2 (Q1-Q16)",
        acts_at: "host edge (both virtual switches)",
        params: vms::PARAMS,
        guest: GuestView {
            changes: &[
                "with guest_sees_ce = false (the default, Q1), the receiving virtual switch clears CE before the guest sees it",
                "the receiving virtual switch resequences data before the guest (§III-C)",
                "the sending virtual switch lowers the window advertised to the sending guest to the sum of the flow's channel windows (Q12)",
            ],
            ce_unless: Some(GUEST_SEES_CE),
            instead: "its senders never see ECE; VMS's channel windows react to the marks instead (§III-F)",
        },
        // 1: flow state expires after state_idle_ms (persistent connections
        // idle longer come back single-channel); 2: when only rVMS's state
        // expired, it signals SIN so both ends are single-channel
        // 3: the resequencer starts at the SYN's sequence (it started at the
        // first data segment to arrive, passed earlier ones up out of order,
        // and the guest's duplicate ACKs Reset flows that lost nothing)
        // 4: T and S default to eq. 3's T'/2 and eq. 4's C'T for the fabric
        // (were 2 ms and 2.5 MB)
        revision: 4,
        ecn_k_pkts: None,
        tables: None,
        build: |p, env, _| Ok(Scheme::Vms(Box::new(vms::Vms::new(p, env)?))),
    },
    SchemeInfo {
        name: "mptcp",
        summary: "MPTCP: n subflows on distinct ports over ECMP, LIA coupled increase, lowest-RTT scheduler, connection-level reassembly",
        follows: "RFC 6356 (LIA), Wischik et al. NSDI 2011; CONGA §5 (8 subflows), Clove §5 (4 subflows)",
        acts_at: "transport (hosts); switches: ECMP",
        params: mptcp::PARAMS,
        guest: UNCHANGED,
        revision: 0,
        ecn_k_pkts: None,
        tables: None,
        build: |p, _, _| Ok(Scheme::Mptcp(mptcp::Mptcp::new(p)?)),
    },
];

/// One sample of a scheme's state for `metrics.scheme_sample_interval_us`:
/// (time, metric name, two indices whose meaning the metric defines, value).
/// AG: ("granularity_pkts" | "congested_paths" | "owd_us", source leaf,
/// destination leaf, or path index for "owd_us" with b = dst*64 + path).
pub type SchemeSample = (SimTime, &'static str, u32, u32, f64);

macro_rules! schemes {
    ($($variant:ident($ty:ty),)*) => {
        /// A load-balancing scheme, dispatched by `match`.
        pub enum Scheme {
            $($variant($ty),)*
        }

        /// `dispatch!(self, s => expr)`: `expr` with `s` bound to the scheme
        /// inside, whichever it is (a `match`, so no hook call is virtual).
        macro_rules! dispatch {
            ($self:ident, $s:ident => $e:expr) => {
                match $self {
                    $(Scheme::$variant($s) => $e,)*
                }
            };
        }
    };
}

// One variant per implementation (large ones boxed); a [`SchemeInfo`] row's
// `build` makes one. This declares [`Scheme`] and `dispatch!`.
schemes! {
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
    /// Builds scheme `name` from its scenario parameters (an unknown name
    /// is an error on key "scheme").
    pub fn new(name: &str, given: &BTreeMap<String, Value>, env: &SchemeEnv) -> Result<Scheme, ParamError> {
        let info = scheme_info(name).ok_or_else(|| ParamError {
            key: "scheme".into(),
            msg: format!("unknown scheme {name:?}; known: {}", SCHEMES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")),
        })?;
        let p = Params::new(given, info.params, name)?;
        (info.build)(&p, env, given)
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

    /// Appends the scheme's state now (time filled in by the caller);
    /// `ctx` lets a scheme report simulator truth beside its own view.
    pub fn sample(&self, ctx: &Ctx, out: &mut Vec<SchemeSample>) {
        match self {
            Scheme::Ag(s) => s.sample(ctx, out),
            Scheme::Vms(s) => s.sample(out),
            _ => {}
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
    fn report(&self, topo: &Topology) -> Vec<ReportTable> {
        dispatch!(self, s => s.report(topo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_net::ReportValue;

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

    /// Each row names one scheme and builds it: `conga_flow` and the two
    /// Clove variants share a type; an unknown name is an error on key
    /// "scheme" that lists the known ones.
    #[test]
    fn each_row_builds_its_scheme() {
        let env = Env::testbed();
        let mut names: Vec<&str> = SCHEMES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMES.len(), "a name is listed twice");
        let new = |name: &str| Scheme::new(name, &BTreeMap::new(), &env.scheme_env());
        assert!(matches!(new("conga_flow"), Ok(Scheme::Conga(_))));
        assert!(matches!(new("clove_int"), Ok(Scheme::Clove(_))));
        assert!(matches!(new("mptcp"), Ok(Scheme::Mptcp(_))));
        let Err(e) = new("conga2") else { panic!("an unknown scheme was built") };
        assert_eq!(e.key, "scheme");
        assert!(e.msg.contains("\"conga2\"") && names.iter().all(|n| e.msg.contains(n)), "{}", e.msg);
    }

    /// The facts other crates look up by name come from the rows: the
    /// revision, the ECN default (Clove-ECN and Hermes: 20 packets) and the
    /// tables sized by the fabric, which schemes sharing a type share.
    #[test]
    fn facts_by_name_come_from_the_rows() {
        let revised: Vec<(&str, u32)> = SCHEMES.iter().filter(|s| s.revision > 0).map(|s| (s.name, s.revision)).collect();
        assert!(revised.contains(&("vms", 4)) && revised.contains(&("clove_int", 2)), "{revised:?}");
        let ecn: Vec<&str> = SCHEMES.iter().filter(|s| s.ecn_k_pkts == Some(20)).map(|s| s.name).collect();
        assert_eq!(ecn, ["clove_ecn", "hermes"]);
        assert!(SCHEMES.iter().all(|s| s.ecn_k_pkts.is_none() || s.ecn_k_pkts == Some(20)));
        let none = |_: &str| None;
        let pst = |_: &str| Some(1024.0);
        let bytes = |name: &str, param: &NumParam<'_>| fabric_table_bytes(name, 64, 76, 8, 4, param);
        assert_eq!(bytes("conga", &none), 64 * 4 * conga::PATH_STATE_BYTES as u64 + 64 * conga::PAIR_STATE_BYTES as u64);
        assert_eq!(bytes("conga_flow", &none), bytes("conga", &none));
        assert_eq!(bytes("hula", &none), 76 * 8 * hula::BEST_HOP_BYTES as u64);
        assert_eq!(bytes("clairvoyant", &pst), 12 * 1024 * pst::SLOT_BYTES as u64);
        assert_eq!(bytes("clairvoyant", &pst), bytes("expeditus", &pst));
        for s in SCHEMES.iter().filter(|s| s.tables.is_none()) {
            assert_eq!(bytes(s.name, &pst), 0, "{}", s.name);
        }
        assert_eq!(bytes("nope", &pst), 0);
        assert_eq!(fabric_table_kind("hula"), "best-hop tables");
    }

    /// What a scheme does to the marks the transport sees is one row's
    /// `guest`: the parameter it names is a declared boolean of the row,
    /// and by default Clove-ECN and VMS clear CE (their papers), Hermes
    /// does not (its authors' simulator); setting the parameter flips it.
    #[test]
    fn schemes_that_clear_ce_name_their_parameter() {
        let mut clearing = vec![];
        for s in SCHEMES {
            if let Some(p) = s.guest.ce_unless {
                let d = s.params.iter().find(|d| d.name == p).unwrap_or_else(|| panic!("{}: {p} not declared", s.name));
                assert!(matches!(d.default, DefaultValue::Bool(_)), "{}", s.name);
                assert!(!s.guest.instead.is_empty() && !s.guest.changes.is_empty(), "{}", s.name);
            }
            if s.clears_ce(&BTreeMap::new()).unwrap() {
                clearing.push(s.name);
            }
        }
        assert_eq!(clearing, ["clove_ecn", "vms"]);
        let set = |v: bool| BTreeMap::from([(GUEST_SEES_CE.to_string(), Value::Bool(v))]);
        let info = |n: &str| scheme_info(n).unwrap();
        assert!(info("hermes").clears_ce(&set(false)).unwrap() && !info("clove_ecn").clears_ce(&set(true)).unwrap());
        assert!(!info("ecmp").clears_ce(&set(false)).unwrap(), "a scheme without the parameter never clears CE");
        assert_eq!(info("hermes").revision, 2);
    }

    /// Scheme state for the summary comes through the trait's `report`:
    /// CONGA's remote metrics per uplink (none received yet), HULA's best
    /// hops (a table even before any probe), AG's tables that have rows
    /// (no one-way delay is measured yet), nothing from ECMP or Presto.
    #[test]
    fn schemes_report_their_own_tables() {
        let env = Env::testbed();
        let report = |name: &str| Scheme::new(name, &BTreeMap::new(), &env.scheme_env()).unwrap().report(&env.topo);
        let conga = report("conga");
        assert_eq!(conga.len(), 1);
        assert_eq!(conga[0].name, "remote_metric_by_uplink");
        assert_eq!(conga[0].rows.len(), 2 * 4 * 2, "two fields per uplink of each leaf");
        assert_eq!(conga[0].rows[0], (vec![env.topo.ports[env.topo.leaf_uplinks().0[0][0].idx()].name.clone(), "reports".into()], ReportValue::Count(0)));
        let hula = report("hula");
        assert_eq!(hula.iter().map(|t| t.name).collect::<Vec<_>>(), ["best_hop_by_tor"]);
        assert_eq!(report("ag").iter().map(|t| t.name).collect::<Vec<_>>(), ["granularity_pkts", "trains_by_uplink", "sample_interval_us"]);
        assert!(report("ecmp").is_empty() && report("presto").is_empty());
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
