//! # lbsim-sim
//!
//! The simulator proper: reads a [`Scenario`], builds the topology, ports,
//! scheme and workload, runs the event loop ([`world`]) and returns the
//! per-flow records, samples and a summary ([`RunOutput`]).
//!
//! ```no_run
//! let text = std::fs::read_to_string("examples/small.toml").unwrap();
//! let sc = lbsim_sim::Scenario::from_toml(&text, &[]).unwrap();
//! let out = lbsim_sim::run(&sc, None, &mut |_| true).unwrap();
//! println!("{}", out.summary["fct_us"]["mean"]);
//! ```

pub mod metrics;
pub mod scenario;
mod world;

/// Bumped whenever a change alters simulation results for an unchanged
/// scenario; results catalogs key their runs on it (with the scenario), so
/// stale results are never reused.
pub const MODEL_REVISION: &str = "2026-11-23.1";

/// The model revision that results of `scheme` depend on: [`MODEL_REVISION`]
/// plus the scheme's own revision when it has one
/// ([`lbsim_lb::SCHEME_REVISIONS`]), e.g. `2026-11-22.2+clove_int.1`.
pub fn model_revision(scheme: &str) -> String {
    match lbsim_lb::SCHEME_REVISIONS.iter().find(|(n, _)| *n == scheme) {
        Some((n, r)) => format!("{MODEL_REVISION}+{n}.{r}"),
        None => MODEL_REVISION.to_string(),
    }
}

pub use metrics::{Counters, FlowRecord, LinkSample, QueueSample};
pub use scenario::{Scenario, ScenarioError};

use lbsim_engine::{BitsPerSec, Bytes, Rng, SimTime};
use lbsim_lb::{Scheme, SchemeEnv};
use lbsim_net::{NodeId, NodeKind, Payload, PortEnds, PortId, PortPlace, PortQueue, Routing, Threshold, Topology};
use lbsim_workload::{
    per_sender_flows, poisson_flows, read_flow_list, Cdf, CdfFormat, FlowSizes, FlowSpec, HostLayout, PairSampler, Pattern, SizeClass, SizeDist,
};
use scenario::bad;
use serde_json::{json, Value};
use std::path::Path;
use world::{Incast, LinkEvent, UdpSource, World};

/// What a run produces.
pub struct RunOutput {
    pub flows: Vec<FlowRecord>,
    pub link_samples: Vec<LinkSample>,
    pub queue_samples: Vec<QueueSample>,
    /// Receive-side goodput per flow and window: (window end, flow, bytes).
    pub flow_rates: Vec<(SimTime, u32, u64)>,
    pub flow_rate_window: Option<SimTime>,
    /// The link samplers' window.
    pub link_window: SimTime,
    /// Packets captured on `metrics.pcap_ports`.
    pub pcap: Vec<metrics::CapturedPacket>,
    /// Congestion-window samples (`metrics.cwnd_sample_interval_us`):
    /// (time, flow id, connection, cwnd bytes, ssthresh bytes).
    pub cwnd_samples: Vec<(SimTime, u32, u32, u64, u64)>,
    /// Scheme state samples (`metrics.scheme_sample_interval_us`).
    pub scheme_samples: Vec<lbsim_lb::SchemeSample>,
    /// Every egress port's totals, indexed by `PortId`.
    pub ports: Vec<PortReport>,
    pub summary: Value,
}

/// One egress port at the end of a run.
#[derive(Clone, Debug)]
pub struct PortReport {
    /// "A->B#k"
    pub name: String,
    pub rate_bps: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub max_qlen_pkts: u32,
    pub up: bool,
}

/// Progress reported during a run.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub sim_time: SimTime,
    pub flows_done: usize,
    pub flows_total: usize,
    pub events: u64,
    pub wall_s: f64,
}

/// Why a run did not produce output.
#[derive(Debug)]
pub enum SimError {
    Scenario(ScenarioError),
    /// The progress callback asked to stop.
    Interrupted,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Scenario(e) => e.fmt(f),
            SimError::Interrupted => f.write_str("interrupted"),
        }
    }
}
impl std::error::Error for SimError {}
impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> Self {
        SimError::Scenario(e)
    }
}

/// Everything derived from a scenario before the run.
pub struct Prepared {
    pub topo: Topology,
    pub flows: Vec<FlowSpec>,
    pub workload_info: Value,
    base_dir: Option<std::path::PathBuf>,
}

fn layout(topo: &Topology) -> HostLayout {
    HostLayout { rack: topo.host_rack.clone(), pod: topo.hosts.iter().map(|&h| topo.nodes[h.idx()].pod).collect() }
}

fn resolve(base: Option<&Path>, p: &str) -> std::path::PathBuf {
    let pb = std::path::PathBuf::from(p);
    match base {
        Some(b) if pb.is_relative() => b.join(pb),
        _ => pb,
    }
}

/// The capacity a load refers to, bits/s, and its description.
fn capacity(sc: &Scenario, topo: &Topology, pairs: &PairSampler) -> Result<(f64, String), ScenarioError> {
    let w = &sc.workload;
    if let Some(c) = w.capacity_gbps {
        return Ok((c * 1e9, format!("capacity_gbps override ({c} Gb/s)")));
    }
    let srcs = pairs.sources();
    let racks: std::collections::BTreeSet<u32> = srcs.iter().map(|&h| topo.host_rack[h as usize]).collect();
    Ok(match w.load_of.as_str() {
        "host_links" => {
            let c: u64 = srcs.iter().map(|&h| topo.ports[topo.nic(topo.host(h)).idx()].rate.0).sum();
            (c as f64, format!("sum of the access-link rates of the {} sending hosts", srcs.len()))
        }
        "leaf_uplinks" => {
            let mut c = 0u64;
            for &r in &racks {
                let leaf = topo.racks[r as usize];
                for &p in &topo.nodes[leaf.idx()].ports {
                    if topo.is_uplink(p) {
                        c += topo.ports[p.idx()].rate.0;
                    }
                }
            }
            if c == 0 {
                return Err(bad("workload.load_of", "leaf_uplinks: the sending racks' leaves have no uplinks; use host_links or capacity_gbps"));
            }
            (c as f64, format!("sum of the uplink rates of the {} leaves with sending hosts (intact topology)", racks.len()))
        }
        "bisection" | "bottleneck_tier" => {
            // the smallest tier cut: per tier, the sum of upward link rates (halved for "bisection")
            let mut tiers: std::collections::BTreeMap<u8, u64> = Default::default();
            for (i, p) in topo.ports.iter().enumerate() {
                let from = &topo.nodes[p.node.idx()];
                if from.kind == NodeKind::Switch && topo.is_uplink(PortId(i as u32)) {
                    *tiers.entry(from.tier as u8).or_default() += p.rate.0;
                }
            }
            let c = tiers
                .values()
                .copied()
                .min()
                .ok_or_else(|| bad("workload.load_of", "bisection/bottleneck_tier: the topology has no switch uplinks; use host_links or capacity_gbps"))?;
            if w.load_of == "bisection" {
                (c as f64 / 2.0, "half the smallest per-tier sum of switch uplink rates".to_string())
            } else {
                (c as f64, "the smallest per-tier sum of switch uplink rates (the bottleneck tier)".to_string())
            }
        }
        other => return Err(bad("workload.load_of", format!("unknown capacity {other:?}"))),
    })
}

/// One size distribution from a workload's (or a class's) size keys;
/// `prefix` names them in errors.
fn size_dist(
    base_dir: Option<&Path>,
    prefix: &str,
    size_bytes: Option<u64>,
    pareto: Option<&scenario::ParetoCfg>,
    cdf: Option<&str>,
    cdf_file: Option<&str>,
    unit: Option<f64>,
) -> Result<SizeDist, ScenarioError> {
    Ok(if let Some(sz) = size_bytes {
        SizeDist::Cdf(Cdf::fixed(sz))
    } else if let Some(p) = pareto {
        SizeDist::Pareto(p.build(&format!("{prefix}.pareto"))?)
    } else if let Some(f) = cdf_file {
        let path = resolve(base_dir, f);
        let text = std::fs::read_to_string(&path).map_err(|e| bad(format!("{prefix}.cdf_file"), format!("{}: {e}", path.display())))?;
        let fmt = match unit {
            Some(u) => CdfFormat::Packets { unit: u },
            None => CdfFormat::Bytes,
        };
        SizeDist::Cdf(Cdf::parse(f, &text, fmt).map_err(|e| bad(format!("{prefix}.cdf_file"), e.0))?)
    } else {
        SizeDist::Cdf(Cdf::builtin(cdf.unwrap_or("websearch"), unit).map_err(|e| bad(format!("{prefix}.cdf"), e.0))?)
    })
}

/// The classes of a workload for the summary: name, share, sizes, mean.
fn class_info(sizes: &FlowSizes, mss: u64) -> Value {
    sizes.classes.iter().map(|c| json!({"name": c.name, "fraction": c.fraction, "sizes": c.dist.name(), "mean_flow_bytes": c.dist.mean(mss)})).collect()
}

/// Builds the topology and the open-loop flow list of a scenario (no run).
/// `base_dir` resolves relative file paths (the scenario file's folder).
pub fn prepare(sc: &Scenario, base_dir: Option<&Path>) -> Result<Prepared, ScenarioError> {
    let topo = sc.build_topology()?;
    let w = &sc.workload;
    let mss = sc.transport.mss_bytes as u64;
    let mut rng = Rng::stream(sc.seed, "traffic");
    let start = SimTime::from_us_f64(w.start_us);
    let (flows, info) = match w.kind.as_str() {
        "poisson" | "per_sender" => {
            let sizes = if w.classes.is_empty() {
                FlowSizes::single(size_dist(
                    base_dir,
                    "workload",
                    w.size_bytes,
                    w.pareto.as_ref(),
                    Some(w.cdf.as_str()),
                    w.cdf_file.as_deref(),
                    w.cdf_unit_bytes,
                )?)
            } else {
                let mut classes = vec![];
                for (i, c) in w.classes.iter().enumerate() {
                    let dist = size_dist(
                        base_dir,
                        &format!("workload.classes[{i}]"),
                        c.size_bytes,
                        c.pareto.as_ref(),
                        c.cdf.as_deref(),
                        c.cdf_file.as_deref(),
                        c.cdf_unit_bytes,
                    )?;
                    classes.push(SizeClass { name: c.name.clone(), fraction: c.fraction, dist });
                }
                FlowSizes { classes }
            };
            let pattern = match w.pattern.as_str() {
                "inter_rack" => Pattern::InterRack { src_racks: w.src_racks.clone(), dst_racks: w.dst_racks.clone() },
                "all_to_all" => Pattern::AllToAll,
                "stride" => Pattern::Stride { stride: w.stride },
                "bijection" => Pattern::Bijection,
                "random_inter_pod" => Pattern::RandomInterPod { pods: w.pods.clone() },
                "bijection_inter_pod" => Pattern::BijectionInterPod { pods: w.pods.clone() },
                p => return Err(bad("workload.pattern", format!("unknown pattern {p:?}"))),
            };
            for (f, racks) in [("workload.src_racks", &w.src_racks), ("workload.dst_racks", &w.dst_racks)] {
                if let Some(r) = racks.iter().find(|&&r| r as usize >= topo.racks.len()) {
                    return Err(bad(f, format!("rack {r} does not exist (the topology has {} racks)", topo.racks.len())));
                }
            }
            let n_pods = topo.hosts.iter().map(|&h| topo.nodes[h.idx()].pod).max().unwrap_or(0) + 1;
            if let Some(p) = w.pods.iter().find(|&&p| p >= n_pods) {
                return Err(bad("workload.pods", format!("pod {p} does not exist (the topology has {n_pods} pod(s))")));
            }
            let pairs = PairSampler::new(pattern, &layout(&topo), &mut rng)
                .map_err(|e| bad(if w.pods.is_empty() { "workload.pattern" } else { "workload.pods" }, e.0))?;
            let mean = sizes.mean(mss);
            if w.kind == "per_sender" {
                let flows = per_sender_flows(start, SimTime::from_us_f64(w.start_gap_us), &sizes, mss, &pairs, &mut rng);
                let info = json!({
                    "kind": "per_sender",
                    "cdf": sizes.name(),
                    "classes": class_info(&sizes, mss),
                    "mean_flow_bytes": mean,
                    "pattern": w.pattern,
                    "start_gap_us": w.start_gap_us,
                    "flows": flows.len(),
                });
                (flows, info)
            } else {
                let (cap, cap_desc) = capacity(sc, &topo, &pairs)?;
                let (rate, offered) = match w.rate_per_s {
                    Some(r) => (r, r * 8.0 * mean),
                    None => (w.load * cap / (8.0 * mean), w.load * cap),
                };
                if w.rate_per_s.is_some() && offered >= cap && !w.allow_overload {
                    return Err(bad(
                        "workload.rate_per_s",
                        format!(
                            "offers {} of {} ({} Gb/s): an overload; set workload.allow_overload = true to run it anyway",
                            lbsim_engine::fmt_num(offered / cap),
                            w.load_of,
                            lbsim_engine::fmt_num(offered / 1e9)
                        ),
                    ));
                }
                let flows = poisson_flows(w.flows, rate, start, &sizes, mss, &pairs, &mut rng);
                let info = json!({
                    "kind": "poisson",
                    "cdf": sizes.name(),
                    "classes": class_info(&sizes, mss),
                    "size_sampling": "CDFs: linear interpolation between points, first point a point mass; Pareto: inverse CDF; clamped to >= 1 MSS",
                    "mean_flow_bytes": mean,
                    "pattern": w.pattern,
                    "load": if w.rate_per_s.is_some() { offered / cap } else { w.load },
                    "load_of": w.load_of,
                    "capacity_gbps": cap / 1e9,
                    "capacity_definition": cap_desc,
                    "offered_gbps": offered / 1e9,
                    "arrival_rate_per_s": rate,
                    "flows": flows.len(),
                });
                (flows, info)
            }
        }
        "flow_list" => {
            let path = resolve(base_dir, w.flow_list.as_deref().unwrap());
            let text = std::fs::read_to_string(&path).map_err(|e| bad("workload.flow_list", format!("{}: {e}", path.display())))?;
            let flows = read_flow_list(&text, topo.num_hosts() as u32).map_err(|e| bad("workload.flow_list", e))?;
            let bytes: u64 = flows.iter().map(|f| f.size).sum();
            let info = json!({"kind": "flow_list", "file": path.display().to_string(), "flows": flows.len(), "total_bytes": bytes});
            (flows, info)
        }
        "incast" => {
            let i = &w.incast;
            let info = json!({"kind": "incast", "client": i.client, "fan_in": i.fan_in, "request_bytes": i.request_bytes, "requests": i.requests});
            (vec![], info)
        }
        _ => (vec![], json!({"kind": "none"})),
    };
    Ok(Prepared { topo, flows, workload_info: info, base_dir: base_dir.map(|p| p.to_path_buf()) })
}

/// The flow list a scenario generates (`lbsim flows`).
pub fn flow_list(sc: &Scenario, base_dir: Option<&Path>) -> Result<Vec<FlowSpec>, ScenarioError> {
    if sc.workload.kind == "incast" {
        return Err(bad("workload.kind", "incast traffic is closed-loop (each request waits for the last): it has no flow list to export"));
    }
    Ok(prepare(sc, base_dir)?.flows)
}

/// Longest round trip between host 0 and any other host in the idle network
/// (one full-size data packet out, one ACK back, per hop store-and-forward).
fn base_rtt(topo: &Topology, routing: &Routing, mss: u32, hb: u32) -> SimTime {
    let mut best = SimTime::ZERO;
    for d in 1..topo.num_hosts() as u32 {
        let mut t = SimTime::ZERO;
        let mut port = topo.nic(topo.host(0));
        for _ in 0..64 {
            let p = &topo.ports[port.idx()];
            t += p.delay + p.rate.tx_time(Bytes((mss + hb) as u64)) + p.delay + p.rate.tx_time(Bytes(hb as u64));
            let next = topo.ports[p.peer.idx()].node;
            if next == topo.host(d) {
                break;
            }
            match routing.next_hops(next, d).first() {
                Some(&n) => port = n,
                None => break,
            }
        }
        best = best.max(t);
    }
    best
}

/// The links `[[random_failures]]` draws: per entry, `count` links of the
/// tier inside the pod, at most `max_per_switch` failed links per switch
/// (counting every entry's draws), from the seed's "failures" stream.
pub fn random_failures(sc: &Scenario, topo: &Topology) -> Result<Vec<(SimTime, lbsim_net::LinkId)>, ScenarioError> {
    let mut rng = Rng::stream(sc.seed, "failures");
    let mut per_switch = vec![0u32; topo.nodes.len()];
    let mut out = vec![];
    for (i, f) in sc.random_failures.iter().enumerate() {
        let field = |k: &str| format!("random_failures[{i}].{k}");
        if topo.kind != "clos3" && topo.kind != "fat_tree" {
            return Err(bad(field("tier"), format!("random failures are drawn in pods of a clos3 or fat_tree fabric; this topology is {}", topo.kind)));
        }
        let (lo, hi) = match f.tier.as_str() {
            "tor_agg" => (lbsim_net::Tier::Leaf, lbsim_net::Tier::Spine),
            "agg_core" => (lbsim_net::Tier::Spine, lbsim_net::Tier::Core),
            t => return Err(bad(field("tier"), format!("must be \"tor_agg\" or \"agg_core\", got {t:?}"))),
        };
        let pods = topo.nodes.iter().filter(|n| n.tier == lbsim_net::Tier::Leaf).map(|n| n.pod).max().unwrap_or(0) + 1;
        if f.pod >= pods {
            return Err(bad(field("pod"), format!("pod {} does not exist (the topology has {pods} pods)", f.pod)));
        }
        if f.max_per_switch == 0 {
            return Err(bad(field("max_per_switch"), "must be >= 1"));
        }
        SimTime::input(f.at_ms, 1e9, "ms", false).map_err(|m| bad(field("at_ms"), m))?;
        let cands: Vec<lbsim_net::LinkId> = topo
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                let a = &topo.nodes[topo.ports[l.ports[0].idx()].node.idx()];
                let b = &topo.nodes[topo.ports[l.ports[1].idx()].node.idx()];
                let (x, y) = if a.tier == lo { (a, b) } else { (b, a) };
                x.tier == lo && y.tier == hi && x.pod == f.pod
            })
            .map(|(k, _)| lbsim_net::LinkId(k as u32))
            .filter(|l| !out.iter().any(|(_, m)| m == l))
            .collect();
        let order = rng.permutation(cands.len());
        let mut got = 0;
        for k in order {
            if got == f.count {
                break;
            }
            let l = &topo.links[cands[k].idx()];
            let ends = [topo.ports[l.ports[0].idx()].node, topo.ports[l.ports[1].idx()].node];
            if ends.iter().all(|n| per_switch[n.idx()] < f.max_per_switch) {
                for n in ends {
                    per_switch[n.idx()] += 1;
                }
                out.push((SimTime::from_us_f64(f.at_ms * 1e3), cands[k]));
                got += 1;
            }
        }
        if got < f.count {
            return Err(bad(
                field("count"),
                format!("only {got} {} links of pod {} can fail with at most {} per switch; asked for {}", f.tier, f.pod, f.max_per_switch, f.count),
            ));
        }
    }
    Ok(out)
}

/// Runs a scenario. `progress` is called about every 0.25 s of wall time;
/// returning false stops the run with [`SimError::Interrupted`].
/// Everything a run does before its first event: topology, routes,
/// ports, scheme, workload, samplers. `validate` stops here.
fn build(sc: &Scenario, base_dir: Option<&Path>) -> Result<Built, SimError> {
    let wall0 = std::time::Instant::now();
    let prep = prepare(sc, base_dir)?;
    let Prepared { topo, flows, workload_info, .. } = prep;
    let _ = &prep.base_dir;
    let n = &sc.network;
    let tcp = sc.tcp_config();

    // failures at t = 0 shape the initial routes; later ones are events
    let mut link_events = vec![];
    let mut down0 = vec![];
    for (i, f) in sc.failures.iter().enumerate() {
        let links = topo.match_links(&f.link);
        if links.is_empty() {
            return Err(bad(format!("failures[{i}].link"), format!("no link matches {:?} (links are named like \"L0-S1#0\")", f.link)).into());
        }
        let at = SimTime::from_us_f64(f.at_ms * 1e3);
        if at == SimTime::ZERO {
            down0.extend(links.iter().copied());
        } else {
            link_events.push(LinkEvent { at, links: links.clone(), up: false });
        }
        if let Some(r) = f.restore_ms {
            link_events.push(LinkEvent { at: SimTime::from_us_f64(r * 1e3), links, up: true });
        }
    }
    let drawn = random_failures(sc, &topo)?;
    for (at, l) in &drawn {
        if *at == SimTime::ZERO {
            down0.push(*l);
        } else {
            link_events.push(LinkEvent { at: *at, links: vec![*l], up: false });
        }
    }
    let mut drop_plan = vec![];
    for (i, d) in sc.drops.iter().enumerate() {
        let ports = topo.match_ports(&d.port);
        if ports.len() != 1 {
            return Err(bad(format!("drops[{i}].port"), format!("{:?} names {} ports; name one egress port, like \"L0->S0#0\"", d.port, ports.len())).into());
        }
        drop_plan.push(crate::world::DropPlan { port: ports[0], at: SimTime::from_us_f64(d.at_ms * 1e3), left: d.count });
    }
    let mut up = vec![true; topo.links.len()];
    for l in &down0 {
        up[l.idx()] = false;
    }
    let routing0 = Routing::compute(&topo, &up);
    if let Some((s, d)) = routing0.first_unreachable_pair(&topo) {
        return Err(bad(
            "topology",
            format!("host {s} cannot reach host {d}{}", if down0.is_empty() { "" } else { " once the links failed at t = 0 are down" }),
        )
        .into());
    }

    // ports
    let sw_limit = match (n.buffer_pkts, n.buffer_bytes) {
        (_, Some(b)) => Threshold::Bytes(b),
        (Some(p), _) => Threshold::Packets(p),
        _ => Threshold::Packets(250),
    };
    let host_limit = n.host_buffer_pkts.map(Threshold::Packets).unwrap_or(sw_limit);
    let ecn = match (n.ecn_k_pkts, n.ecn_k_bytes) {
        (Some(k), _) => Some(Threshold::Packets(k)),
        (_, Some(b)) => Some(Threshold::Bytes(b)),
        // a scheme's own default (Clove-ECN: 20 packets)
        _ => lbsim_lb::default_ecn_k_pkts(&sc.lb.scheme).map(Threshold::Packets),
    };
    let backpressure = n.host_nic.as_deref() != Some("drop_tail");
    let ecn_ports = n.ecn_ports.as_deref().unwrap_or("switch");
    let fabric_only_ecn = ecn_ports == "fabric";
    let host_nic_limit = match host_limit {
        Threshold::Packets(p) => p,
        Threshold::Bytes(b) => (b / (sc.transport.mss_bytes + sc.transport.header_bytes) as u64).max(1) as u32,
    };
    let ports: Vec<PortQueue> = topo
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let limit = match (topo.is_host(p.node), backpressure) {
                (true, true) => Threshold::Packets(u32::MAX),
                (true, false) => host_limit,
                (false, _) => sw_limit,
            };
            // only switches mark (GUIDE §4); "fabric": not toward hosts either
            let marks = match topo.port_place(PortId(i as u32)) {
                PortPlace::HostNic => false,
                PortPlace::ToHost => !fabric_only_ecn,
                PortPlace::Fabric => true,
            };
            let peer_node = topo.ports[p.peer.idx()].node;
            let ends = PortEnds { peer: p.peer, peer_node, peer_is_host: topo.is_host(peer_node), at_host: topo.is_host(p.node) };
            PortQueue::new(p.rate, p.delay, limit, if marks { ecn } else { None }).with_ends(ends)
        })
        .collect();
    let salts: Vec<u64> = (0..topo.nodes.len()).map(|i| Rng::substream(sc.seed, "ecmp", i as u64).next_u64()).collect();

    // scheme
    let params = sc.lb_params()?;
    let rtt = base_rtt(&topo, &routing0, tcp.mss, tcp.header_bytes);
    let scheme_rtt = sc.lb.rtt_us.map(SimTime::from_us_f64).unwrap_or(rtt);
    let env = SchemeEnv { topo: &topo, routing: &routing0, mss: tcp.mss, header_bytes: tcp.header_bytes, base_rtt: scheme_rtt };
    let scheme = Scheme::new(&sc.lb.scheme, &params, &env).map_err(|e| {
        if e.key == "scheme" {
            bad("lb.scheme", e.msg)
        } else if e.key.starts_with("topology") || e.key.starts_with("workload") {
            bad(e.key, e.msg) // the scheme cannot run on this scenario's fabric or traffic
        } else {
            bad(format!("lb.params.{}", e.key), e.msg)
        }
    })?;

    let persistent = (sc.transport.connections == "persistent").then_some(sc.transport.connections_per_pair);
    // the routes already computed with the links failed at t = 0 down
    let mut w = World::new(topo, up, routing0, ports, salts, scheme, Rng::stream(sc.seed, "scheme"), tcp, persistent);
    for l in &down0 {
        for p in w.topo.links[l.idx()].ports {
            let lost = w.ports[p.idx()].fail(SimTime::ZERO);
            debug_assert!(lost.is_empty());
        }
    }
    w.host_nic_limit = backpressure.then_some(host_nic_limit);
    w.mptcp_n = w.lb.mptcp_subflows();
    let ecn_desc = match ecn {
        Some(Threshold::Packets(k)) => json!({"k_pkts": k, "ports": ecn_ports}),
        Some(Threshold::Bytes(b)) => json!({"k_bytes": b, "ports": ecn_ports}),
        None => Value::Null,
    };
    w.jitter = SimTime::from_us_f64(n.host_jitter_ns.unwrap_or(1000.0) / 1e3);
    w.jitter_rng = Rng::stream(sc.seed, "host_jitter");
    w.link_events = link_events;
    w.drop_plan = drop_plan;
    if sc.metrics.cwnd_sample_interval_us > 0.0 {
        w.cwnd_interval = Some(SimTime::from_us_f64(sc.metrics.cwnd_sample_interval_us));
    }
    if sc.metrics.scheme_sample_interval_us > 0.0 {
        w.scheme_interval = Some(SimTime::from_us_f64(sc.metrics.scheme_sample_interval_us));
    }
    if sc.metrics.flow_rate_window_ms > 0.0 {
        w.flow_rate_window = Some(SimTime::from_us_f64(sc.metrics.flow_rate_window_ms * 1e3));
    }
    let last_start = flows.last().map(|f| f.start).unwrap_or(SimTime::ZERO);
    w.arrivals = flows;

    // incast
    let wl = &sc.workload;
    if wl.kind == "incast" {
        let i = &wl.incast;
        let h = w.topo.num_hosts() as u32;
        if i.client >= h {
            return Err(bad("workload.incast.client", format!("host {} does not exist ({} hosts)", i.client, h)).into());
        }
        let servers: Vec<u32> = if i.servers.is_empty() { (0..h).filter(|&x| x != i.client).collect() } else { i.servers.clone() };
        if let Some(&s) = servers.iter().find(|&&s| s >= h || s == i.client) {
            return Err(bad("workload.incast.servers", format!("server {s} is not a host other than the client")).into());
        }
        if (i.fan_in as usize) > servers.len() {
            return Err(bad("workload.incast.fan_in", format!("{} exceeds the {} candidate servers", i.fan_in, servers.len())).into());
        }
        w.incast = Some(Incast {
            client: i.client,
            servers,
            fan_in: i.fan_in,
            request_bytes: i.request_bytes,
            requests: i.requests,
            issued: 0,
            outstanding: 0,
            req_start: SimTime::ZERO,
            completed: vec![],
            rng: Rng::stream(sc.seed, "traffic"),
        });
    }

    // UDP background
    for (k, u) in sc.udp.iter().enumerate() {
        let h = w.topo.num_hosts() as u32;
        for (f, v) in [("src", u.src), ("dst", u.dst)] {
            if v >= h {
                return Err(bad(format!("udp[{k}].{f}"), format!("host {v} does not exist ({h} hosts)")).into());
            }
        }
        let stop = u.stop_ms.map(|s| SimTime::from_us_f64(s * 1e3)).unwrap_or(SimTime::MAX);
        if stop != SimTime::MAX {
            w.udp_until = w.udp_until.max(stop);
        }
        let via = match &u.via {
            None => None,
            Some(name) => {
                let n = w.topo.node_by_name(name).filter(|&n| !w.topo.is_host(n));
                Some(n.ok_or_else(|| bad(format!("udp[{k}].via"), format!("no switch named {name:?} (switches are named like \"S0\", \"L1\")")))?)
            }
        };
        w.udp.push(UdpSource {
            via,
            src: w.topo.host(u.src),
            dst: w.topo.host(u.dst),
            rate: BitsPerSec::from_gbps_f64(u.rate_gbps),
            size: u.packet_bytes,
            stop,
            sent_pkts: 0,
            recv_pkts: 0,
            recv_bytes: 0,
        });
        w.schedule_udp(k as u32, SimTime::from_us_f64(u.start_ms * 1e3));
    }

    // samplers
    let m = &sc.metrics;
    for (i, pat) in m.link_samplers.iter().enumerate() {
        let ps = w.topo.match_ports(pat);
        if ps.is_empty() {
            return Err(bad(format!("metrics.link_samplers[{i}]"), format!("no port matches {pat:?}")).into());
        }
        w.link_sample_ports.extend(ps);
    }
    for (i, pat) in m.queue_samplers.iter().enumerate() {
        let ps = w.topo.match_ports(pat);
        if ps.is_empty() {
            return Err(bad(format!("metrics.queue_samplers[{i}]"), format!("no port matches {pat:?}")).into());
        }
        w.queue_sample_ports.extend(ps);
    }
    for (i, pat) in m.pcap_ports.iter().enumerate() {
        let ps = w.topo.match_ports(pat);
        if ps.is_empty() {
            return Err(bad(format!("metrics.pcap_ports[{i}]"), format!("no port matches {pat:?}")).into());
        }
        if w.pcap_port.is_empty() {
            w.pcap_port = vec![false; w.topo.ports.len()];
        }
        for p in ps {
            w.pcap_port[p.idx()] = true;
        }
    }
    w.pcap_left = m.pcap_max_packets;
    w.path_record = m.path_record;
    w.link_window = SimTime::from_us_f64(m.utilization_window_ms * 1e3);
    w.queue_interval = SimTime::from_us_f64(m.queue_sample_interval_us);
    if !m.flowlet_gaps_us.is_empty() {
        w.flowlet_obs = Some(metrics::FlowletObserver::new(m.flowlet_gaps_us.iter().map(|&g| SimTime::from_us_f64(g)).collect()));
    }

    let hard_stop = match (sc.run.stop_ms, wl.kind.as_str()) {
        (Some(s), _) => SimTime::from_us_f64(s * 1e3),
        (None, "poisson" | "per_sender" | "flow_list") => last_start + SimTime::from_us_f64(sc.run.stop_after_last_start_ms * 1e3),
        (None, "incast") => SimTime::from_ms(3_600_000),
        (None, _) => return Err(bad("run.stop_ms", "required when the workload has no flows (kind = \"none\")").into()),
    };

    Ok(Built { w, hard_stop, workload_info, rtt, ecn_desc, wall0 })
}

struct Built {
    w: World,
    hard_stop: SimTime,
    workload_info: Value,
    rtt: SimTime,
    ecn_desc: Value,
    wall0: std::time::Instant,
}

/// Checks a scenario as far as a run goes before its first event, so
/// `lbsim validate` and `lbsim run` cannot disagree about what is valid.
pub fn validate(sc: &Scenario, base_dir: Option<&Path>) -> Result<(), SimError> {
    build(sc, base_dir).map(|_| ())
}

pub fn run(sc: &Scenario, base_dir: Option<&Path>, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, SimError> {
    let Built { mut w, hard_stop, workload_info, rtt, ecn_desc, wall0 } = build(sc, base_dir)?;
    let wl = &sc.workload;
    // run
    w.start(SimTime::from_us_f64(wl.start_us));
    let total = if w.incast.is_some() { (wl.incast.requests * wl.incast.fan_in) as usize } else { w.arrivals.len() };
    let setup_s = wall0.elapsed().as_secs_f64();
    let t_run = std::time::Instant::now();
    let mut last_report = t_run;
    let mut steps: u64 = 0;
    loop {
        if !w.step(hard_stop) {
            break;
        }
        if w.finished() {
            break;
        }
        steps += 1;
        if steps & 0xFFFF == 0 && last_report.elapsed().as_secs_f64() >= 0.25 {
            last_report = std::time::Instant::now();
            let p =
                Progress { sim_time: w.now(), flows_done: w.done, flows_total: total, events: w.q.events_processed(), wall_s: t_run.elapsed().as_secs_f64() };
            if !progress(&p) {
                return Err(SimError::Interrupted);
            }
        }
    }
    let run_s = t_run.elapsed().as_secs_f64();
    let events = w.q.events_processed();
    Ok(finish(sc, w, Ran { events, workload_info, rtt, ecn_desc, setup_s, run_s }))
}

/// What a run learnt beside its world, for the outputs.
struct Ran {
    events: u64,
    workload_info: Value,
    rtt: SimTime,
    ecn_desc: Value,
    setup_s: f64,
    run_s: f64,
}

/// The outputs of a finished run.
fn finish(sc: &Scenario, mut w: World, ran: Ran) -> RunOutput {
    let Ran { events, workload_info, rtt, ecn_desc, setup_s, run_s } = ran;
    w.finalize_unfinished();
    w.record_unstarted();
    w.flush_flow_rates();
    let mut summary = summarize(sc, &w, events, workload_info, rtt, setup_s, run_s);
    summary["network"]["ecn_threshold"] = ecn_desc;
    if let Some(d) = w.lb.discovery_mode() {
        summary["scheme"]["path_discovery"] = json!(d);
    }
    if let Some(d) = w.lb.discovery() {
        // the paths host 0 uses at the end, per destination, as link names
        let mut m = serde_json::Map::new();
        for (dst, set) in d.path_sets(0) {
            let paths: Vec<Value> = set
                .paths
                .iter()
                .zip(&set.ports)
                .map(|(p, port)| json!({"port": port, "links": p.iter().map(|q| w.topo.links[w.topo.ports[q.idx()].link.idx()].name.clone()).collect::<Vec<_>>()}))
                .collect();
            m.insert(dst.to_string(), Value::Array(paths));
        }
        summary["scheme"]["paths_from_host0"] = Value::Object(m);
    }
    if let Some(n) = w.mptcp_n {
        summary["transport"]["mptcp_subflows"] = json!(n);
    }
    RunOutput {
        ports: w
            .topo
            .ports
            .iter()
            .zip(&w.ports)
            .map(|(t, q)| {
                let st = q.stats();
                PortReport {
                    name: t.name.clone(),
                    rate_bps: q.rate.0,
                    tx_pkts: st.tx_pkts,
                    tx_bytes: st.tx_bytes,
                    drops: st.drops,
                    ecn_marks: st.ecn_marks,
                    max_qlen_pkts: st.max_qlen_pkts,
                    up: q.up,
                }
            })
            .collect(),
        flows: std::mem::take(&mut w.flows),
        link_samples: std::mem::take(&mut w.link_samples),
        queue_samples: std::mem::take(&mut w.queue_samples),
        cwnd_samples: std::mem::take(&mut w.cwnd_samples),
        flow_rates: std::mem::take(&mut w.flow_rates),
        flow_rate_window: w.flow_rate_window,
        scheme_samples: std::mem::take(&mut w.scheme_samples),
        link_window: w.link_window,
        pcap: w
            .pcap
            .iter()
            .map(|(t, port, p)| {
                let h = p.tcp().copied().unwrap_or_default();
                let host = |n: NodeId| if w.topo.is_host(n) { w.topo.host_index(n) } else { u32::MAX };
                metrics::CapturedPacket {
                    t: *t,
                    port: port.0,
                    src: host(p.src),
                    dst: host(p.dst),
                    sport: p.sport,
                    dport: p.dport,
                    outer_sport: p.outer_sport,
                    kind: match p.payload {
                        Payload::Tcp { .. } => "tcp",
                        Payload::Udp { .. } => "udp",
                        _ => "control",
                    },
                    size: p.size,
                    ttl: p.ttl,
                    ect: p.ect,
                    ce: p.ce,
                    seq: h.seq,
                    ack: h.ack,
                    flags: h.flags,
                    wnd: h.wnd,
                    len: h.len,
                }
            })
            .collect(),
        summary,
    }
}

/// Per sampled port: mean utilisation over the windows; over all sampled
/// ports: the throughput imbalance (MAX - MIN) / AVG per window (windows in
/// which the ports carried nothing are skipped).
fn link_sampler_summary(w: &World, window_ms: f64) -> Value {
    let mut per: std::collections::BTreeMap<u32, (f64, u64)> = Default::default();
    let mut by_t: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for l in &w.link_samples {
        let rate = w.ports[l.port.idx()].rate.0 as f64;
        let util = l.bytes as f64 * 8.0 / (rate * window_ms / 1e3);
        let e = per.entry(l.port.0).or_default();
        e.0 += util;
        e.1 += 1;
        by_t.entry(l.t.0).or_default().push(l.bytes as f64);
    }
    let mut imb: Vec<f64> = by_t
        .values()
        .filter(|v| v.len() > 1 && v.iter().sum::<f64>() > 0.0)
        .map(|v| {
            let (mx, mn) = (v.iter().cloned().fold(f64::MIN, f64::max), v.iter().cloned().fold(f64::MAX, f64::min));
            (mx - mn) / (v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    json!({
        "window_ms": window_ms,
        "mean_utilisation": per.iter().map(|(p, (u, n))| (w.topo.ports[*p as usize].name.clone(), json!(u / *n as f64))).collect::<serde_json::Map<_, _>>(),
        "imbalance": metrics::describe(&mut imb),
    })
}

fn summarize(sc: &Scenario, w: &World, events: u64, workload: Value, rtt: SimTime, setup_s: f64, run_s: f64) -> Value {
    let (fct, slow, buckets) = metrics::fct_summary(&w.flows, &sc.metrics.size_buckets_bytes, &sc.metrics.percentiles);
    let completed = w.flows.iter().filter(|f| f.finish.is_some()).count();
    let not_started = w.flows.iter().filter(|f| !f.started).count();
    let (retx, tos) = w.tcp_totals();
    let st = w.sender_totals();
    let c = &w.c;
    let (live, live_bytes) = w.in_flight();
    let ok = c.sent == c.delivered + c.dropped + live && (c.sent_bytes as i64 + c.lb_header_bytes) as u64 == c.delivered_bytes + c.dropped_bytes + live_bytes;
    // queue drops and marks by where the port sits
    let mut at = [[0u64; 2]; 3];
    for (i, q) in w.ports.iter().enumerate() {
        let k = w.topo.port_place(PortId(i as u32)) as usize; // HostNic, ToHost, Fabric: 0, 1, 2
        let st = q.stats();
        at[k][0] += st.drops;
        at[k][1] += st.ecn_marks;
    }
    let marks: u64 = at.iter().map(|a| a[1]).sum();
    let by_place = |j: usize| json!({"host_nic": at[0][j], "switch_to_host": at[1][j], "fabric": at[2][j]});
    let failed: Vec<&str> = w.link_up.iter().enumerate().filter(|(_, u)| !**u).map(|(i, _)| w.topo.links[i].name.as_str()).collect();
    let mut s = json!({
        "lbsim_version": env!("CARGO_PKG_VERSION"),
        "model_revision": model_revision(&sc.lb.scheme),
        "scenario": sc.name,
        "seed": sc.seed,
        "scheme": {"name": sc.lb.scheme, "params": serde_json::to_value(&sc.lb.params).unwrap_or(Value::Null), "stats": w.lb.stats().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(), "resolved": w.lb.resolved().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
        "topology": {
            "kind": w.topo.kind,
            "hosts": w.topo.num_hosts(),
            "switches": w.topo.nodes.len() - w.topo.num_hosts(),
            "links": w.topo.links.len(),
            "links_down_at_end": failed,
            "random_failures": random_failures(sc, &w.topo).unwrap_or_default().iter().map(|(_, l)| w.topo.links[l.idx()].name.clone()).collect::<Vec<_>>(),
            "base_rtt_us": rtt.as_us_f64(),
        },
        "transport": {
            "cc": sc.transport.cc,
            "connections": sc.transport.connections,
            "host_nic": if w.host_nic_limit.is_some() { "backpressure" } else { "drop_tail" },
            "mss_bytes": sc.transport.mss_bytes,
            "min_rto_ms": sc.transport.min_rto_ms,
            "connections_opened": w.connections_opened(),
            "retransmits": retx,
            "timeouts": tos,
            "fast_recoveries": st.fast_recoveries,
            "spurious_retransmits": st.spurious_retransmits,
            "fast_recoveries_by_reordering": w.flows.iter().map(|f| f.fr_reorder).sum::<u64>(),
            "fast_recoveries_by_loss": w.flows.iter().map(|f| f.fr_loss).sum::<u64>(),
            "undos": st.undos,
            "ecn_reductions": st.ecn_reductions,
            "reordering": sc.transport.reordering,
            "restart_after_idle": sc.transport.restart_after_idle,
            "rto_ssthresh": sc.transport.rto_ssthresh,
            "prr_bound": sc.transport.prr_bound,
        },
        "workload": workload,
        "flows": {"total": w.flows.len(), "completed": completed, "unfinished": w.flows.len() - completed - not_started, "not_started": not_started},
        "fct_us": fct,
        "slowdown": slow,
        "buckets": buckets,
        "classes": metrics::class_summary(&w.flows, &sc.workload.classes.iter().map(|c| c.name.clone()).collect::<Vec<_>>(), &sc.metrics.percentiles),
        "network": {
            "packets_sent": c.sent,
            "bytes_sent": c.sent_bytes,
            "drops": {"total": c.dropped - c.probe_expiries, "queue": c.drop_queue, "injected": c.drop_injected, "link_down": c.drop_link, "no_route": c.drop_noroute, "ttl": c.drop_ttl, "queue_at": by_place(0)},
            "probe_ttl_expiries": c.probe_expiries,
            "consumed_by_scheme": c.consumed_by_lb,
            "ecn_marks": marks,
            "ecn_marks_at": by_place(1),
        },
        "conservation": {
            "sent": c.sent,
            "delivered": c.delivered,
            "dropped": c.dropped,
            "in_flight": live,
            "sent_bytes": c.sent_bytes,
            "header_bytes_added_in_network": c.lb_header_bytes,
            "delivered_bytes": c.delivered_bytes,
            "dropped_bytes": c.dropped_bytes,
            "in_flight_bytes": live_bytes,
            "ok": ok,
        },
        "sim_time_s": w.now().as_secs_f64(),
        "events": events,
        "setup_wall_s": setup_s,
        "wall_s": run_s,
        "events_per_s": if run_s > 0.0 { events as f64 / run_s } else { 0.0 },
    });
    if let Some(obs) = &w.flowlet_obs {
        s["flowlets_observed"] = obs.summary();
    }
    if let (Some(fl), false) = (s["scheme"]["stats"]["flowlets"].as_f64(), w.flows.is_empty()) {
        // flowlets of both directions (ACK flows too, where a scheme splits them)
        s["scheme"]["flowlets_per_flow"] = json!(fl / w.flows.len() as f64);
    }
    s["scheme"]["rtt_us_stated"] = json!(sc.lb.rtt_us); // null: the idle fabric RTT (topology.base_rtt_us)
    if let Some(u) = w.lb.path_use() {
        let rows = u.rows();
        let (fl, by): (u64, u64) = rows.iter().fold((0, 0), |a, r| (a.0 + r.1, a.1 + r.2));
        let per: serde_json::Map<_, _> = rows
            .iter()
            .map(|&(n, f, b, wt)| {
                let mut v = json!({
                    "flowlets": f,
                    "data_bytes": b,
                    "flowlet_share": if fl > 0 { f as f64 / fl as f64 } else { 0.0 },
                    "byte_share": if by > 0 { b as f64 / by as f64 } else { 0.0 },
                });
                if let Some(wt) = wt {
                    v["mean_weight"] = json!(wt);
                }
                (w.topo.nodes[n.idx()].name.clone(), v)
            })
            .collect();
        s["scheme"]["paths_via"] = per.into();
    }
    if let Some(rows) = w.lb.remote_by_uplink() {
        // CONGA: what each leaf learnt about each of its paths (by uplink tag)
        let per: serde_json::Map<_, _> = rows.iter().map(|&(p, n, m)| (w.topo.ports[p.idx()].name.clone(), json!({"reports": n, "mean_metric": m}))).collect();
        s["scheme"]["remote_metric_by_uplink"] = per.into();
    }
    for (section, row, col, v) in w.lb.tables(&w.topo) {
        s["scheme"][section][row][col] = json!(v);
    }
    if !w.injected.is_empty() {
        // the drops the scenario asked for, and whom they hit
        let v: Vec<Value> =
            w.injected.iter().map(|d| json!({"port": w.topo.ports[d.port.idx()].name, "at_us": d.at.as_us_f64(), "flow_id": d.flow, "seq": d.seq})).collect();
        s["network"]["injected_drops"] = v.into();
    }
    if let Some(rows) = w.lb.best_hops() {
        // HULA: each ToR's best next hop per destination ToR at the end
        let mut per = serde_json::Map::new();
        for (tor, rack, hop, util) in rows {
            let to = w.topo.nodes[w.topo.racks[rack as usize].idx()].name.clone();
            let e = per.entry(w.topo.nodes[tor.idx()].name.clone()).or_insert_with(|| json!({}));
            e[to] = json!({"hop": w.topo.ports[hop.idx()].name, "path_utilisation": util});
        }
        s["scheme"]["best_hop_by_tor"] = per.into();
    }
    if !w.link_samples.is_empty() {
        s["link_samplers"] = link_sampler_summary(w, sc.metrics.utilization_window_ms);
    }
    if !w.queue_samples.is_empty() {
        let mut per: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
        for q in &w.queue_samples {
            per.entry(q.port.0).or_default().push(q.pkts as f64);
        }
        s["queue_samplers"] =
            per.into_iter().map(|(p, mut v)| (w.topo.ports[p as usize].name.clone(), metrics::describe(&mut v))).collect::<serde_json::Map<_, _>>().into();
    }
    if !w.udp.is_empty() {
        s["udp"] = w.udp.iter().map(|u| json!({"sent_pkts": u.sent_pkts, "recv_pkts": u.recv_pkts, "recv_bytes": u.recv_bytes})).collect();
    }
    if let Some(i) = &w.incast {
        let durs: Vec<f64> = i.completed.iter().map(|(a, b)| (*b - *a).as_secs_f64()).collect();
        let total: f64 = durs.iter().sum();
        let bytes = i.request_bytes as f64 * durs.len() as f64;
        s["incast"] = json!({
            "requests_completed": i.completed.len(),
            "requests": i.requests,
            "fan_in": i.fan_in,
            "goodput_gbps": if total > 0.0 { bytes * 8.0 / total / 1e9 } else { 0.0 },
            "mean_request_ms": if durs.is_empty() { Value::Null } else { json!(total / durs.len() as f64 * 1e3) },
        });
    }
    s
}

#[cfg(test)]
mod tests;
