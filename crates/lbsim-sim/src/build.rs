//! Everything a run does before its first event: the topology and the
//! open-loop flow list ([`prepare`]), then routes, ports, the scheme, the
//! closed-loop and background traffic, failures and samplers ([`build`]).
//! `lbsim validate` stops here, so it and `lbsim run` agree on what is
//! valid.

use crate::scenario::{
    self, bad, AckClass, Connections, EcnPorts, FailureTier, HostNic, LoadOf, PatternKind, Placement, Scenario, ScenarioError, TransportKind, WorkloadKind,
};
use crate::world::{DropPlan, Incast, JobSpec, LinkEvent, RdmaSetup, SampleConfig, UdpSource, World, WorldConfig};
use crate::{metrics, SimError};
use lbsim_engine::{BitsPerSec, Bytes, Rng, SimTime};
use lbsim_lb::{Scheme, SchemeEnv};
use lbsim_net::{LinkId, NodeKind, PortEnds, PortId, PortPlace, PortQueue, Routing, Threshold, Topology};
use lbsim_tcp::TcpConfig;
use lbsim_workload::{
    per_sender_flows, poisson_flows, read_flow_list, Cdf, CdfFormat, FlowSizes, FlowSpec, HostLayout, PairSampler, Pattern, SizeClass, SizeDist,
};
use serde_json::{json, Value};
use std::path::Path;

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

pub(crate) fn resolve(base: Option<&Path>, p: &str) -> std::path::PathBuf {
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
    Ok(match w.load_of {
        LoadOf::HostLinks => {
            let c: u64 = srcs.iter().map(|&h| topo.ports[topo.nic(topo.host(h)).idx()].rate.0).sum();
            (c as f64, format!("sum of the access-link rates of the {} sending hosts", srcs.len()))
        }
        LoadOf::LeafUplinks => {
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
        LoadOf::Bisection | LoadOf::BottleneckTier => {
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
            if w.load_of == LoadOf::Bisection {
                (c as f64 / 2.0, "half the smallest per-tier sum of switch uplink rates".to_string())
            } else {
                (c as f64, "the smallest per-tier sum of switch uplink rates (the bottleneck tier)".to_string())
            }
        }
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
    let topo = sc.build_topology_in(base_dir)?;
    let w = &sc.workload;
    let (flows, info) = match w.kind {
        WorkloadKind::Poisson | WorkloadKind::PerSender => generated_flows(sc, &topo, base_dir)?,
        WorkloadKind::FlowList => listed_flows(sc, &topo, base_dir)?,
        WorkloadKind::Hpcc => hpcc_flows(sc, &topo, base_dir)?,
        WorkloadKind::Incast => {
            let i = &w.incast;
            let info = json!({"kind": "incast", "client": i.client, "fan_in": i.fan_in, "request_bytes": i.request_bytes, "requests": i.requests});
            (vec![], info)
        }
        WorkloadKind::Collective | WorkloadKind::Nothing => (vec![], json!({"kind": "none"})),
    };
    Ok(Prepared { topo, flows, workload_info: info, base_dir: base_dir.map(|p| p.to_path_buf()) })
}

/// The flow sizes of a generated workload: one distribution, or its classes.
fn flow_sizes(sc: &Scenario, base_dir: Option<&Path>) -> Result<FlowSizes, ScenarioError> {
    let w = &sc.workload;
    if w.classes.is_empty() {
        return Ok(FlowSizes::single(size_dist(
            base_dir,
            "workload",
            w.size_bytes,
            w.pareto.as_ref(),
            Some(w.cdf.as_str()),
            w.cdf_file.as_deref(),
            w.cdf_unit_bytes,
        )?));
    }
    let mut classes = vec![];
    for (i, c) in w.classes.iter().enumerate() {
        let dist =
            size_dist(base_dir, &format!("workload.classes[{i}]"), c.size_bytes, c.pareto.as_ref(), c.cdf.as_deref(), c.cdf_file.as_deref(), c.cdf_unit_bytes)?;
        classes.push(SizeClass { name: c.name.clone(), fraction: c.fraction, dist });
    }
    Ok(FlowSizes { classes })
}

/// The (source, destination) sampler of `workload.pattern`, its racks and
/// pods checked against the topology.
fn pair_sampler(sc: &Scenario, topo: &Topology, rng: &mut Rng) -> Result<PairSampler, ScenarioError> {
    let w = &sc.workload;
    let pattern = match w.pattern {
        PatternKind::InterRack => Pattern::InterRack { src_racks: w.src_racks.clone(), dst_racks: w.dst_racks.clone() },
        PatternKind::AllToAll => Pattern::AllToAll,
        PatternKind::Stride => Pattern::Stride { stride: w.stride },
        PatternKind::Bijection => Pattern::Bijection,
        PatternKind::RandomInterPod => Pattern::RandomInterPod { pods: w.pods.clone() },
        PatternKind::BijectionInterPod => Pattern::BijectionInterPod { pods: w.pods.clone() },
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
    PairSampler::new(pattern, &layout(topo), rng).map_err(|e| bad(if w.pods.is_empty() { "workload.pattern" } else { "workload.pods" }, e.0))
}

/// The flows of a generated workload (`poisson`, `per_sender`) and their
/// description for the summary.
fn generated_flows(sc: &Scenario, topo: &Topology, base_dir: Option<&Path>) -> Result<(Vec<FlowSpec>, Value), ScenarioError> {
    let w = &sc.workload;
    let mss = sc.transport.mss_bytes as u64;
    let mut rng = Rng::stream(sc.seed, "traffic");
    let start = SimTime::from_us_f64(w.start_us);
    let sizes = flow_sizes(sc, base_dir)?;
    let pairs = pair_sampler(sc, topo, &mut rng)?;
    let mean = sizes.mean(mss);
    if w.kind == WorkloadKind::PerSender {
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
        return Ok((flows, info));
    }
    let (cap, cap_desc) = capacity(sc, topo, &pairs)?;
    let (rate, offered) = match w.rate_per_s {
        Some(r) => (r, r * 8.0 * mean),
        None => (w.load * cap / (8.0 * mean), w.load * cap),
    };
    check_arrival_rate(sc, rate, offered, cap, mean)?;
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
    Ok((flows, info))
}

/// Refuses a Poisson arrival rate (per second; `offered` bits/s of
/// capacity `cap`, mean flow `mean` bytes) that overloads the capacity
/// without `allow_overload`, or whose arrivals would outrun the clock.
fn check_arrival_rate(sc: &Scenario, rate: f64, offered: f64, cap: f64, mean: f64) -> Result<(), ScenarioError> {
    let w = &sc.workload;
    if w.rate_per_s.is_some() && offered >= cap && !w.allow_overload {
        return Err(bad(
            "workload.rate_per_s",
            format!(
                "offers {} of {} ({} Gb/s): an overload; set workload.allow_overload = true to run it anyway",
                lbsim_engine::fmt_num(offered / cap),
                scenario::word_of(w.load_of),
                lbsim_engine::fmt_num(offered / 1e9)
            ),
        ));
    }
    // the arrivals must fit the clock: refuse a span beyond the 1-day limit
    let span_s = w.flows as f64 / rate;
    if span_s > SimTime::MAX_INPUT.as_secs_f64() {
        let key = if w.rate_per_s.is_some() {
            "workload.rate_per_s"
        } else if w.size_bytes.is_some() {
            "workload.size_bytes"
        } else {
            "workload.load"
        };
        return Err(bad(
            key,
            format!(
                "{} flows at {} arrivals/s (mean flow {} bytes) would arrive over {} days of simulated time, beyond the 1-day limit",
                w.flows,
                lbsim_engine::fmt_num(rate),
                lbsim_engine::fmt_num(mean),
                lbsim_engine::fmt_num((span_s / 86_400.0 * 10.0).round() / 10.0)
            ),
        ));
    }
    Ok(())
}

/// The flows of an HPCC simulator flow file (`workload.file`).
fn hpcc_flows(sc: &Scenario, topo: &Topology, base_dir: Option<&Path>) -> Result<(Vec<FlowSpec>, Value), ScenarioError> {
    let path = resolve(base_dir, sc.workload.file.as_deref().unwrap());
    let text = std::fs::read_to_string(&path).map_err(|e| bad("workload.file", format!("{}: {e}", path.display())))?;
    let flows = crate::hpcc::read_flows(&text, topo).map_err(|m| bad("workload.file", format!("{}: {m}", path.display())))?;
    let bytes: u64 = flows.iter().map(|f| f.size).sum();
    Ok((flows.clone(), json!({"kind": "hpcc", "file": path.display().to_string(), "flows": flows.len(), "total_bytes": bytes})))
}

/// The flows of a `flow_list` file and their description for the summary.
fn listed_flows(sc: &Scenario, topo: &Topology, base_dir: Option<&Path>) -> Result<(Vec<FlowSpec>, Value), ScenarioError> {
    let path = resolve(base_dir, sc.workload.flow_list.as_deref().unwrap());
    let text = std::fs::read_to_string(&path).map_err(|e| bad("workload.flow_list", format!("{}: {e}", path.display())))?;
    let flows = read_flow_list(&text, topo.num_hosts() as u32).map_err(|e| bad("workload.flow_list", e))?;
    if let Some((i, f)) = flows.iter().enumerate().find(|(_, f)| f.start > SimTime::MAX_INPUT) {
        return Err(bad(
            "workload.flow_list",
            format!("{}: flow {i} starts beyond the 1-day limit on any time input (start_us of {src} -> {dst})", path.display(), src = f.src, dst = f.dst),
        ));
    }
    let bytes: u64 = flows.iter().map(|f| f.size).sum();
    let info = json!({"kind": "flow_list", "file": path.display().to_string(), "flows": flows.len(), "total_bytes": bytes});
    Ok((flows, info))
}

/// The flow list a scenario generates (`lbsim flows`).
pub fn flow_list(sc: &Scenario, base_dir: Option<&Path>) -> Result<Vec<FlowSpec>, ScenarioError> {
    if sc.workload.kind == WorkloadKind::Incast {
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
        let (lo, hi) = match f.tier {
            FailureTier::TorAgg => (lbsim_net::Tier::Leaf, lbsim_net::Tier::Spine),
            FailureTier::AggCore => (lbsim_net::Tier::Spine, lbsim_net::Tier::Core),
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
                format!(
                    "only {got} {} links of pod {} can fail with at most {} per switch; asked for {}",
                    scenario::word_of(f.tier),
                    f.pod,
                    f.max_per_switch,
                    f.count
                ),
            ));
        }
    }
    Ok(out)
}

/// The hosts of each `[[jobs]]` entry, rank by rank: an explicit list as
/// given, or a count placed (`packed`, `spread`, `random`) on the hosts no
/// earlier job took.
pub fn place_jobs(sc: &Scenario, topo: &Topology) -> Result<Vec<Vec<u32>>, ScenarioError> {
    let nh = topo.num_hosts() as u32;
    let mut taken = vec![false; nh as usize];
    let mut rng = Rng::stream(sc.seed, "jobs");
    let mut out = vec![];
    for (i, j) in sc.jobs.iter().enumerate() {
        let key = format!("jobs[{i}].ranks");
        let hosts: Vec<u32> = match &j.ranks {
            scenario::Ranks::Hosts(h) => {
                if let Some(&x) = h.iter().find(|&&x| x >= nh) {
                    return Err(bad(key, format!("host {x} does not exist (the fabric has {nh} hosts)")));
                }
                h.clone()
            }
            scenario::Ranks::Count(n) => {
                let free: Vec<u32> = (0..nh).filter(|&h| !taken[h as usize]).collect();
                if *n as usize > free.len() {
                    let others = nh as usize - free.len();
                    return Err(bad(
                        key,
                        format!(
                            "{n} ranks do not fit: the fabric has {nh} hosts{}",
                            if others > 0 { format!(", {others} taken by earlier jobs") } else { String::new() }
                        ),
                    ));
                }
                match j.placement {
                    Placement::Packed => free[..*n as usize].to_vec(),
                    Placement::Spread => {
                        // round robin over the racks, each rack's free hosts in order
                        let mut by_rack: Vec<std::collections::VecDeque<u32>> = vec![Default::default(); topo.racks.len()];
                        for &h in &free {
                            by_rack[topo.host_rack[h as usize] as usize].push_back(h);
                        }
                        let mut v = vec![];
                        while v.len() < *n as usize {
                            for q in by_rack.iter_mut() {
                                if v.len() < *n as usize {
                                    if let Some(h) = q.pop_front() {
                                        v.push(h);
                                    }
                                }
                            }
                        }
                        v
                    }
                    Placement::Random => {
                        // a partial Fisher-Yates over the free hosts
                        let mut pool = free;
                        for k in 0..*n as usize {
                            let r = k + rng.below((pool.len() - k) as u64) as usize;
                            pool.swap(k, r);
                        }
                        pool.truncate(*n as usize);
                        pool
                    }
                }
            }
        };
        for &h in &hosts {
            taken[h as usize] = true;
        }
        out.push(hosts);
    }
    Ok(out)
}

/// Everything a run does before its first event: topology, routes,
/// ports, scheme, workload, samplers. `validate` stops here.
pub(crate) fn build(sc: &Scenario, base_dir: Option<&Path>) -> Result<Built, SimError> {
    let wall0 = std::time::Instant::now();
    let prep = prepare(sc, base_dir)?;
    let Prepared { topo, flows, workload_info, .. } = prep;
    let _ = &prep.base_dir;
    if sc.transport.connections == Connections::Persistent && !flows.is_empty() {
        // the exact pairs, now that the flows are known (a flow list's were not)
        let pairs: std::collections::HashSet<(u32, u32)> = flows.iter().map(|f| (f.src, f.dst)).collect();
        sc.check_connections(pairs.len() as u64, flows.len() as u64)?;
    }
    let tcp = sc.tcp_config();
    let (link_events, down0) = link_failures(sc, &topo)?;
    let drop_plan = drop_plan(sc, &topo)?;
    let (link_up, routing) = initial_routes(&topo, &down0)?;
    let pq = port_queues(sc, &topo);
    let (lb, rtt) = scheme(sc, &topo, &routing, &tcp, pq.switch_limit)?;
    let incast = incast(sc, &topo)?;
    let udp = udp_sources(sc, &topo)?;
    let jobs = sc
        .jobs
        .iter()
        .zip(place_jobs(sc, &topo)?)
        .enumerate()
        .map(|(i, (j, hosts))| JobSpec {
            name: j.name.clone().unwrap_or_else(|| format!("job{i}")),
            op: lbsim_workload::CollOp::from_name(&j.op).expect("validated"),
            hosts,
            size: j.size_bytes,
            iterations: j.iterations,
            gap: SimTime::from_us_f64(j.gap_us),
            channels: j.channels,
            start: SimTime::from_us_f64(j.start_us),
        })
        .collect();
    let samplers = sample_config(sc, &topo)?;
    let hard_stop = hard_stop(sc, &flows)?;
    let n = &sc.network;
    let topo_rates: Vec<BitsPerSec> = (0..topo.num_hosts() as u32).map(|h| topo.port(topo.nic(topo.host(h))).rate).collect();
    let cfg = WorldConfig {
        salts: (0..topo.nodes.len()).map(|i| Rng::substream(sc.seed, "ecmp", i as u64).next_u64()).collect(),
        topo,
        link_up,
        routing,
        down0,
        ports: pq.ports,
        lb,
        lb_rng: Rng::stream(sc.seed, "scheme"),
        tcp,
        persistent: (sc.transport.connections == Connections::Persistent).then_some(sc.transport.connections_per_pair),
        host_nic_limit: pq.host_nic_limit,
        jitter: SimTime::from_us_f64(n.host_jitter_ns.unwrap_or(1000.0) / 1e3),
        jitter_rng: Rng::stream(sc.seed, "host_jitter"),
        arrivals: flows,
        incast,
        udp,
        jobs,
        link_events,
        drop_plan,
        samplers,
        // the steps table names the uplink of each step's slowest flow
        path_record: sc.metrics.path_record || !sc.jobs.is_empty(),
        rdma: rdma_setup(sc, &topo_rates),
    };
    Ok(Built { w: World::new(cfg), hard_stop, workload_info, rtt, ecn_desc: pq.ecn_desc, wall0 })
}

/// The RDMA transport and lossless fabric (`transport.kind = "rdma"`);
/// DCQCN's default steps scale with the slowest host link.
fn rdma_setup(sc: &Scenario, host_rates: &[BitsPerSec]) -> Option<RdmaSetup> {
    (sc.transport.kind == TransportKind::Rdma).then(|| {
        let line = host_rates.iter().copied().min().unwrap_or(BitsPerSec::gbps(100));
        RdmaSetup { cfg: sc.rdma.config(line), pfc: sc.rdma.pfc_config(), ack_high: sc.rdma.ack_class == AckClass::High, rng: Rng::stream(sc.seed, "ecn") }
    })
}

/// The scheduled link failures (`[[failures]]`, `[[random_failures]]`):
/// the events after t = 0, and the links down at t = 0 (they shape the
/// initial routes).
fn link_failures(sc: &Scenario, topo: &Topology) -> Result<(Vec<LinkEvent>, Vec<LinkId>), ScenarioError> {
    let mut link_events = vec![];
    let mut down0 = vec![];
    for (i, f) in sc.failures.iter().enumerate() {
        let links = topo.match_links(&f.link);
        if links.is_empty() {
            return Err(bad(format!("failures[{i}].link"), format!("no link matches {:?} (links are named like \"L0-S1#0\")", f.link)));
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
    for (at, l) in random_failures(sc, topo)? {
        if at == SimTime::ZERO {
            down0.push(l);
        } else {
            link_events.push(LinkEvent { at, links: vec![l], up: false });
        }
    }
    Ok((link_events, down0))
}

/// The scheduled packet drops (`[[drops]]`), one egress port each.
fn drop_plan(sc: &Scenario, topo: &Topology) -> Result<Vec<DropPlan>, ScenarioError> {
    let mut plan = vec![];
    for (i, d) in sc.drops.iter().enumerate() {
        let ports = topo.match_ports(&d.port);
        if ports.len() != 1 {
            return Err(bad(format!("drops[{i}].port"), format!("{:?} names {} ports; name one egress port, like \"L0->S0#0\"", d.port, ports.len())));
        }
        plan.push(DropPlan { port: ports[0], at: SimTime::from_us_f64(d.at_ms * 1e3), left: d.count });
    }
    Ok(plan)
}

/// Per link, up at t = 0, and the routes over those links; refused if a
/// host cannot reach another.
fn initial_routes(topo: &Topology, down0: &[LinkId]) -> Result<(Vec<bool>, Routing), ScenarioError> {
    let mut up = vec![true; topo.links.len()];
    for l in down0 {
        up[l.idx()] = false;
    }
    let routing = Routing::compute(topo, &up);
    if let Some((s, d)) = routing.first_unreachable_pair(topo) {
        return Err(bad(
            "topology",
            format!("host {s} cannot reach host {d}{}", if down0.is_empty() { "" } else { " once the links failed at t = 0 are down" }),
        ));
    }
    Ok((up, routing))
}

/// The egress ports and what the rest of the build needs from their settings.
struct PortSetup {
    ports: Vec<PortQueue>,
    /// The switch buffer limit (the scheme sizes its state from it).
    switch_limit: Threshold,
    /// NIC back-pressure limit, packets (`None`: drop-tail NICs).
    host_nic_limit: Option<u32>,
    /// The ECN marking threshold and ports, for the summary.
    ecn_desc: Value,
}

/// Builds every egress port: buffers (`network.buffer_*`, host NICs with
/// back-pressure or drop-tail) and ECN marking (switch ports only).
fn port_queues(sc: &Scenario, topo: &Topology) -> PortSetup {
    let n = &sc.network;
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
        _ => lbsim_lb::scheme_info(&sc.lb.scheme).and_then(|s| s.ecn_k_pkts).map(Threshold::Packets),
    };
    let backpressure = n.host_nic != Some(HostNic::DropTail);
    let ecn_ports = n.ecn_ports.unwrap_or(EcnPorts::Switch);
    let fabric_only_ecn = ecn_ports == EcnPorts::Fabric;
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
            // only switches mark (a NIC or qdisc does not set CE); "fabric": not toward hosts either
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
    let ecn_desc = match ecn {
        Some(Threshold::Packets(k)) => json!({"k_pkts": k, "ports": ecn_ports}),
        Some(Threshold::Bytes(b)) => json!({"k_bytes": b, "ports": ecn_ports}),
        None => Value::Null,
    };
    PortSetup { ports, switch_limit: sw_limit, host_nic_limit: backpressure.then_some(host_nic_limit), ecn_desc }
}

/// The load-balancing scheme (`[lb]`) over the initial routes, and the
/// idle fabric's base RTT.
fn scheme(sc: &Scenario, topo: &Topology, routing: &Routing, tcp: &TcpConfig, sw_limit: Threshold) -> Result<(Scheme, SimTime), ScenarioError> {
    let params = sc.lb_params()?;
    let rtt = base_rtt(topo, routing, tcp.mss, tcp.header_bytes);
    let scheme_rtt = sc.lb.rtt_us.map(SimTime::from_us_f64).unwrap_or(rtt);
    let switch_buffer_bytes = match sw_limit {
        Threshold::Bytes(b) => b,
        Threshold::Packets(p) => p as u64 * (tcp.mss + tcp.header_bytes) as u64,
    };
    let env = SchemeEnv { topo, routing, switch_buffer_bytes, mss: tcp.mss, header_bytes: tcp.header_bytes, base_rtt: scheme_rtt };
    let scheme = Scheme::new(&sc.lb.scheme, &params, &env).map_err(|e| {
        if e.key == "scheme" {
            bad("lb.scheme", e.msg)
        } else if e.key.starts_with("topology") || e.key.starts_with("workload") {
            bad(e.key, e.msg) // the scheme cannot run on this scenario's fabric or traffic
        } else {
            bad(format!("lb.params.{}", e.key), e.msg)
        }
    })?;
    Ok((scheme, rtt))
}

/// The closed-loop incast client and its servers (`workload.kind = "incast"`).
fn incast(sc: &Scenario, topo: &Topology) -> Result<Option<Incast>, ScenarioError> {
    let wl = &sc.workload;
    if wl.kind != WorkloadKind::Incast {
        return Ok(None);
    }
    let i = &wl.incast;
    let h = topo.num_hosts() as u32;
    if i.client >= h {
        return Err(bad("workload.incast.client", format!("host {} does not exist ({} hosts)", i.client, h)));
    }
    let servers: Vec<u32> = if i.servers.is_empty() { (0..h).filter(|&x| x != i.client).collect() } else { i.servers.clone() };
    if let Some(&s) = servers.iter().find(|&&s| s >= h || s == i.client) {
        return Err(bad("workload.incast.servers", format!("server {s} is not a host other than the client")));
    }
    if (i.fan_in as usize) > servers.len() {
        return Err(bad("workload.incast.fan_in", format!("{} exceeds the {} candidate servers", i.fan_in, servers.len())));
    }
    Ok(Some(Incast {
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
    }))
}

/// The constant-bit-rate UDP background sources (`[[udp]]`).
fn udp_sources(sc: &Scenario, topo: &Topology) -> Result<Vec<UdpSource>, ScenarioError> {
    let mut out = vec![];
    for (k, u) in sc.udp.iter().enumerate() {
        let h = topo.num_hosts() as u32;
        for (f, v) in [("src", u.src), ("dst", u.dst)] {
            if v >= h {
                return Err(bad(format!("udp[{k}].{f}"), format!("host {v} does not exist ({h} hosts)")));
            }
        }
        let via = match &u.via {
            None => None,
            Some(name) => {
                let n = topo.node_by_name(name).filter(|&n| !topo.is_host(n));
                Some(n.ok_or_else(|| bad(format!("udp[{k}].via"), format!("no switch named {name:?} (switches are named like \"S0\", \"L1\")")))?)
            }
        };
        out.push(UdpSource {
            via,
            start: SimTime::from_us_f64(u.start_ms * 1e3),
            src: topo.host(u.src),
            dst: topo.host(u.dst),
            rate: BitsPerSec::from_gbps_f64(u.rate_gbps),
            size: u.packet_bytes,
            stop: u.stop_ms.map(|s| SimTime::from_us_f64(s * 1e3)).unwrap_or(SimTime::MAX),
            sent_pkts: 0,
            recv_pkts: 0,
            recv_bytes: 0,
        });
    }
    Ok(out)
}

/// The ports a list of `[metrics]` patterns names; `key` names the list
/// in errors (every pattern must match a port).
fn sampled_ports(topo: &Topology, key: &str, patterns: &[String]) -> Result<Vec<PortId>, ScenarioError> {
    let mut out = vec![];
    for (i, pat) in patterns.iter().enumerate() {
        let ps = topo.match_ports(pat);
        if ps.is_empty() {
            return Err(bad(format!("{key}[{i}]"), format!("no port matches {pat:?}")));
        }
        out.extend(ps);
    }
    Ok(out)
}

/// What `[metrics]` asks to sample, capture and observe.
fn sample_config(sc: &Scenario, topo: &Topology) -> Result<SampleConfig, ScenarioError> {
    let m = &sc.metrics;
    let link_sample_ports = sampled_ports(topo, "metrics.link_samplers", &m.link_samplers)?;
    let queue_sample_ports = sampled_ports(topo, "metrics.queue_samplers", &m.queue_samplers)?;
    let mut pcap_port = vec![];
    for p in sampled_ports(topo, "metrics.pcap_ports", &m.pcap_ports)? {
        if pcap_port.is_empty() {
            pcap_port = vec![false; topo.ports.len()];
        }
        pcap_port[p.idx()] = true;
    }
    let every = |us: f64| (us > 0.0).then(|| SimTime::from_us_f64(us));
    Ok(SampleConfig {
        link_sample_ports,
        link_window: SimTime::from_us_f64(m.utilization_window_ms * 1e3),
        queue_sample_ports,
        queue_interval: SimTime::from_us_f64(m.queue_sample_interval_us),
        scheme_interval: every(m.scheme_sample_interval_us),
        cwnd_interval: every(m.cwnd_sample_interval_us),
        flow_rate_window: every(m.flow_rate_window_ms * 1e3),
        pcap_port,
        pcap_left: m.pcap_max_packets,
        flowlet_obs: (!m.flowlet_gaps_us.is_empty())
            .then(|| metrics::FlowletObserver::new(m.flowlet_gaps_us.iter().map(|&g| SimTime::from_us_f64(g)).collect())),
    })
}

/// When the run stops at the latest: `run.stop_ms`, else a time after the
/// last open-loop start, else an hour for closed-loop traffic and jobs.
fn hard_stop(sc: &Scenario, flows: &[FlowSpec]) -> Result<SimTime, ScenarioError> {
    let wl = &sc.workload;
    let last_start = flows.last().map(|f| f.start).unwrap_or(SimTime::ZERO);
    let hard_stop = match (sc.run.stop_ms, wl.kind) {
        (Some(s), _) => SimTime::from_us_f64(s * 1e3),
        (None, WorkloadKind::Poisson | WorkloadKind::PerSender | WorkloadKind::FlowList | WorkloadKind::Hpcc) => {
            last_start + SimTime::from_us_f64(sc.run.stop_after_last_start_ms * 1e3)
        }
        (None, WorkloadKind::Incast) => SimTime::from_ms(3_600_000),
        // the jobs end the run when they are done
        (None, WorkloadKind::Collective | WorkloadKind::Nothing) if !sc.jobs.is_empty() => SimTime::from_ms(3_600_000),
        (None, _) => return Err(bad("run.stop_ms", "required when the workload has no flows (kind = \"none\")")),
    };
    if let (Some(s), Some(first)) = (sc.run.stop_ms, flows.first().map(|f| f.start)) {
        if hard_stop <= first && sc.udp.is_empty() && wl.kind != WorkloadKind::Incast {
            return Err(bad(
                "run.stop_ms",
                format!(
                    "{} ms is not after the first flow's start ({} ms): the run would stop before any flow starts",
                    lbsim_engine::fmt_num(s),
                    lbsim_engine::fmt_num(first.as_secs_f64() * 1e3)
                ),
            ));
        }
    }
    Ok(hard_stop)
}

pub(crate) struct Built {
    pub w: World,
    pub hard_stop: SimTime,
    pub workload_info: Value,
    pub rtt: SimTime,
    pub ecn_desc: Value,
    pub wall0: std::time::Instant,
}
