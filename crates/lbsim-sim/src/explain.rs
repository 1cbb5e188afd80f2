//! What a scenario asks for, before running it (`lbsim validate`, and the
//! header `lbsim run` prints): the fabric's size, the capacity the load
//! refers to, the offered load of every rack against its uplinks and
//! downlinks, the flows and the simulated time to expect, an estimate of the
//! events, wall time and peak memory of the run, and warnings for known
//! traps, each naming its key. `long_run` warns of work estimated above
//! [`LONG_WARN_S`] (ten minutes), naming the key that decides it, and
//! [`too_long`] refuses work that would take more than a day; `--allow-long`
//! runs either without a word.
//!
//! # The cost model and its accuracy
//!
//! Packet-hops are counted from the flow list: each flow sends
//! `ceil(size / MSS)` data packets (no more than its sender's line rate
//! allows before the expected end of the run) over `2 + d` links, `d` the
//! switch-to-switch distance between the two racks, and the receiver
//! returns one ACK per `transport.delayed_ack` packets over as many links
//! (under RDMA: MTU-sized packets, one ACK each). Incast requests, UDP
//! sources and the sends of every step of every `[[jobs]]` iteration (split
//! over the job's channels) add theirs the same way. A collective run is
//! expected to end when its jobs' iterations, each step at line rate plus
//! one RTT and the gap after each iteration, are done. Then
//!
//! ```text
//! events  ≈ EVENTS_PER_PKT_HOP · packet-hops + EVENTS_PER_FLOW · flows
//!           (EVENTS_PER_PKT_HOP_RDMA under transport.kind = "rdma")
//! wall_s  ≈ events / EVENTS_PER_S
//! peak RSS ≈ RSS_BASE + RSS_PER_FLOW · flows + RSS_PER_PORT · ports
//! ```
//!
//! See [`CALIBRATION`] for the runs the constants were measured on and how
//! far off the estimate is on them. The event count misses congestion,
//! drops and retransmissions, schemes' probes and timers, and the wall time
//! scales with the machine and its load: take both as orders of magnitude.
//! The test `estimated_events_are_within_2x_of_the_counted` checks the
//! event estimate on four scenarios of different shape, cut short.

use crate::build::{build, place_jobs, Built};
use crate::scenario::{bad, Scenario, ScenarioError, TransportKind, WorkloadKind};
use crate::SimError;
use lbsim_engine::{fmt_num, SimTime};
use lbsim_net::{NodeId, Topology};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::Path;

/// Events per packet crossing one link (enqueue, transmit, arrive, plus the
/// host's sending and receiving work shared out over the hops).
pub const EVENTS_PER_PKT_HOP: f64 = 1.05;
/// Events per packet crossing one link under RDMA (`transport.kind =
/// "rdma"`: every port sends by dequeue, every data packet is acknowledged).
pub const EVENTS_PER_PKT_HOP_RDMA: f64 = 1.3;
/// Events per flow (handshake, timers, completion).
pub const EVENTS_PER_FLOW: f64 = 20.0;
/// Events per second of wall time: release `lbsim-run` on a 2-core VM
/// (AMD EPYC, shared with other builds, load average ~3.5), 2026-12,
/// measured 7.2 M/s on examples/b1.toml (23.9 M events in 3.31 s), 4.7 M/s
/// on bench/scale/k8_ws10000.toml (130.4 M in 27.95 s), 9.4 M/s on
/// examples/allreduce_leafspine.toml (33.4 M in 3.54 s) and 5.4 M/s on
/// examples/rdma_dcqcn.toml with 300 flows (8.2 M in 1.51 s); this is
/// their middle.
pub const EVENTS_PER_S: f64 = 6.5e6;
/// Peak resident memory of the simulator (`lbsim-run`; the Python CLI adds
/// ~150 MB of interpreter and Arrow), bytes: a base, per flow and per port
/// (the queued packets of a congested port included).
pub const RSS_BASE: f64 = 5.0e6;
pub const RSS_PER_FLOW: f64 = 400.0;
pub const RSS_PER_PORT: f64 = 3000.0;
/// The runs the model was fitted to and how far off it is on them.
pub const CALIBRATION: &str = "events per packet-hop and flow fitted 2026-11 on b1, small, k8_ws10000 and the AG, CONGA and Clove \
     experiment bases (0.93-1.05x of the counted events, peak RSS 0.9-1.25x), per RDMA packet-hop 2026-12 on rdma_dcqcn; \
     events/s measured 2026-12 (release lbsim-run, 2-core VM, 4.7-9.4 M events/s): events 0.86-1.05x and wall time 0.62-1.52x \
     of measured on b1, k8_ws10000, allreduce_leafspine and rdma_dcqcn (300 flows)";

/// Work above this many seconds of estimated wall time is refused unless allowed.
pub const LONG_S: f64 = 86_400.0;
/// Work above this many seconds of estimated wall time is warned about
/// before the run's first event (`long_run`), unless allowed: ten minutes,
/// above every example and benchmark scenario (the longest, the k = 8
/// all-reduce of bench/scale, is estimated at ~4 min).
pub const LONG_WARN_S: f64 = 600.0;

/// The explanation of a scenario as JSON (see the module docs); validates
/// it as a run would (errors are the run's errors).
pub fn explain(sc: &Scenario, base_dir: Option<&Path>) -> Result<Value, SimError> {
    let b = build(sc, base_dir)?;
    Ok(explain_built(sc, &b))
}

/// Per-rack BFS distances (in switch-to-switch links) from one leaf.
fn bfs(topo: &Topology, from: NodeId) -> Vec<u32> {
    let mut d = vec![u32::MAX; topo.nodes.len()];
    let mut q = VecDeque::new();
    d[from.idx()] = 0;
    q.push_back(from);
    while let Some(n) = q.pop_front() {
        for &p in &topo.nodes[n.idx()].ports {
            let m = topo.ports[topo.ports[p.idx()].peer.idx()].node;
            if d[m.idx()] == u32::MAX && !topo.is_host(m) {
                d[m.idx()] = d[n.idx()] + 1;
                q.push_back(m);
            }
        }
    }
    d
}

/// Links a packet crosses from a host of rack `a` to a host of rack `b`.
struct Hops<'a> {
    topo: &'a Topology,
    rows: std::collections::HashMap<u32, Vec<u32>>,
}

impl Hops<'_> {
    fn get(&mut self, a: u32, b: u32) -> f64 {
        if a == b {
            return 2.0;
        }
        let topo = self.topo;
        if self.rows.len() > 256 && !self.rows.contains_key(&a) {
            return 2.0 + if topo.kind == "fat_tree" || topo.kind == "clos3" { 4.0 } else { 2.0 };
        }
        let row = self.rows.entry(a).or_insert_with(|| bfs(topo, topo.racks[a as usize]));
        let d = row[topo.racks[b as usize].idx()];
        2.0 + if d == u32::MAX { 2.0 } else { d as f64 }
    }
}

fn gbps(bps: f64) -> f64 {
    (bps / 1e9 * 1e6).round() / 1e6
}

/// [`explain`] on an already built run.
pub(crate) fn explain_built(sc: &Scenario, b: &Built) -> Value {
    let cx = Ctx::new(sc, b);
    let mut hops = Hops { topo: cx.topo, rows: Default::default() };
    let span = Span::of(&cx, &mut hops);
    let work = Work::of(&cx, &span, &mut hops);
    let mut warnings = vec![];
    let (racks, overloaded) = rack_loads(&cx, &span, &work, &mut warnings);
    known_traps(&cx, &span, &work, &mut warnings);
    report(&cx, &span, &work, racks, overloaded, warnings)
}

/// What every part of an explanation reads: the scenario, the built run
/// and the packet sizes and times of its TCP configuration.
struct Ctx<'a> {
    sc: &'a Scenario,
    b: &'a Built,
    topo: &'a Topology,
    /// Payload bytes per full segment.
    mss: f64,
    /// Bits of a full segment on the wire.
    pkt_bits: f64,
    /// ACKs per data packet.
    acks: f64,
    rtt_s: f64,
    stop_s: f64,
    /// Events per packet crossing one link, by transport.
    ev_per_hop: f64,
    /// The hosts of each job, rank by rank (as the build places them).
    job_hosts: Vec<Vec<u32>>,
}

impl<'a> Ctx<'a> {
    fn new(sc: &'a Scenario, b: &'a Built) -> Self {
        let tcp = &b.w.tcp.cfg;
        // RDMA: MTU-sized packets, each acknowledged
        let (mss, header, acks, ev_per_hop) = match sc.transport.kind {
            TransportKind::Tcp => (tcp.mss, tcp.header_bytes, 1.0 / tcp.delack_count as f64, EVENTS_PER_PKT_HOP),
            TransportKind::Rdma => {
                let r = sc.rdma.config(lbsim_engine::BitsPerSec::gbps(100));
                (r.mtu_bytes, r.header_bytes, 1.0, EVENTS_PER_PKT_HOP_RDMA)
            }
        };
        Ctx {
            sc,
            b,
            topo: &b.w.topo,
            mss: mss as f64,
            pkt_bits: 8.0 * (mss + header) as f64,
            acks,
            rtt_s: b.rtt.as_secs_f64(),
            stop_s: b.hard_stop.as_secs_f64(),
            ev_per_hop,
            job_hosts: place_jobs(sc, &b.w.topo).unwrap_or_default(),
        }
    }
    /// Rate of host `h`'s link to its switch, b/s.
    fn nic_rate(&self, h: u32) -> f64 {
        self.topo.ports[self.topo.nic(self.topo.host(h)).idx()].rate.0 as f64
    }
    /// Rate of the link from host `h`'s switch down to it, b/s.
    fn down_rate(&self, h: u32) -> f64 {
        let t = self.topo;
        t.ports[t.ports[t.nic(t.host(h)).idx()].peer.idx()].rate.0 as f64
    }
    /// Line rate from host `s` to host `d`.
    fn line(&self, s: u32, d: u32) -> f64 {
        self.nic_rate(s).min(self.down_rate(d))
    }
}

/// When the run's work starts and ends: its open-loop flows, incast
/// requests and UDP sources.
struct Span {
    n: usize,
    first: f64,
    last: f64,
    total_bytes: f64,
    /// The largest flow: bytes, seconds at line rate.
    largest: (u64, f64),
    start_s: f64,
    inc_req_s: f64,
    inc_hops: f64,
    has_work: bool,
    /// Per job: its start and the seconds of one iteration (its steps at
    /// line rate, one RTT each, and the gap after it).
    jobs: Vec<(f64, f64)>,
    /// Simulated time the run is expected to end at.
    sim_end: f64,
}

impl Span {
    fn of(cx: &Ctx, hops: &mut Hops) -> Span {
        let (w, flows) = (&cx.b.w, &cx.b.w.arrivals);
        let n = flows.len();
        let first = flows.first().map(|f| f.start.as_secs_f64()).unwrap_or(0.0);
        let last = flows.last().map(|f| f.start.as_secs_f64()).unwrap_or(0.0);
        let mut natural_end = first;
        let mut total_bytes = 0.0;
        let mut largest = (0u64, 0.0f64); // bytes, seconds at line rate
        for f in flows {
            let s = f.start.as_secs_f64() + f.size as f64 * 8.0 * (cx.pkt_bits / 8.0 / cx.mss) / cx.line(f.src, f.dst) + cx.rtt_s;
            natural_end = natural_end.max(s);
            total_bytes += f.size as f64;
            let need = f.size as f64 * 8.0 / cx.line(f.src, f.dst);
            if need > largest.1 {
                largest = (f.size, need);
            }
        }
        // incast: requests in sequence, each limited by the client's downlink
        let incast = cx.sc.workload.kind == WorkloadKind::Incast;
        let start_s = SimTime::from_us_f64(cx.sc.workload.start_us).as_secs_f64();
        let (mut inc_req_s, mut inc_hops) = (0.0, 4.0);
        if let Some(i) = &w.incast {
            let c = i.client;
            let rate = cx.down_rate(c);
            inc_req_s = i.request_bytes as f64 * cx.pkt_bits / cx.mss / rate + 2.0 * cx.rtt_s;
            let cr = cx.topo.host_rack[c as usize];
            let k = i.servers.len().clamp(1, 64);
            inc_hops = i.servers.iter().take(k).map(|&s| hops.get(cx.topo.host_rack[s as usize], cr)).sum::<f64>() / k as f64;
            natural_end = natural_end.max(start_s + i.requests as f64 * inc_req_s);
        }
        // UDP sources run until their stop (or the run's)
        let udp_until = w.udp_until.as_secs_f64();
        natural_end = natural_end.max(if w.udp_until > SimTime::ZERO { udp_until } else { 0.0 });
        // a UDP source above its host's link keeps that NIC's queue full:
        // the host's own flows wait behind it while it sends
        for (u, c) in w.udp.iter().zip(&cx.sc.udp) {
            if u.rate.0 as f64 > cx.nic_rate(c.src) && flows.iter().any(|f| f.src == c.src && f.start < u.stop) {
                natural_end = natural_end.max(u.stop.as_secs_f64());
            }
        }
        // jobs: their iterations in sequence, each step at line rate
        let mut jobs = vec![];
        for (j, hosts) in cx.sc.jobs.iter().zip(&cx.job_hosts) {
            let op = lbsim_workload::CollOp::from_name(&j.op).expect("validated");
            let steps: f64 = op
                .steps(hosts.len() as u32, j.size_bytes)
                .iter()
                .map(|st| {
                    let slowest = st.iter().map(|s| s.bytes as f64 * cx.pkt_bits / cx.mss / cx.line(hosts[s.from as usize], hosts[s.to as usize]));
                    slowest.fold(0.0, f64::max) + cx.rtt_s
                })
                .sum();
            let (start, iter_s) = (j.start_us * 1e-6, steps + j.gap_us * 1e-6);
            natural_end = natural_end.max(start + j.iterations as f64 * iter_s);
            jobs.push((start, iter_s));
        }
        let has_work = n > 0 || incast || !jobs.is_empty();
        let sim_end = if has_work || !cx.sc.udp.is_empty() { cx.stop_s.min(natural_end.max(first)) } else { cx.stop_s };
        Span { n, first, last, total_bytes, largest, start_s, inc_req_s, inc_hops, has_work, jobs, sim_end }
    }
}

/// The run's work until it ends: packet-hops by source, the resulting
/// estimate and the key that dominates it.
struct Work {
    started: usize,
    out_bytes: Vec<f64>,
    in_bytes: Vec<f64>,
    pkt_hops: f64,
    n_flows: f64,
    events: f64,
    wall_s: f64,
    rss: f64,
    /// The key that decides the amount of work.
    heavy: String,
}

impl Work {
    fn of(cx: &Ctx, span: &Span, hops: &mut Hops) -> Work {
        let (sc, w, topo, sim_end) = (cx.sc, &cx.b.w, cx.topo, span.sim_end);
        let mut flow_pkt_hops = 0.0;
        let mut started = 0usize;
        let mut out_bytes = vec![0.0f64; topo.racks.len()];
        let mut in_bytes = vec![0.0f64; topo.racks.len()];
        for f in &w.arrivals {
            let st = f.start.as_secs_f64();
            if st >= sim_end {
                continue;
            }
            started += 1;
            let (rs, rd) = (topo.host_rack[f.src as usize], topo.host_rack[f.dst as usize]);
            let pkts = (f.size as f64 / cx.mss).ceil().min((sim_end - st) * cx.line(f.src, f.dst) / cx.pkt_bits).max(1.0);
            flow_pkt_hops += pkts * (1.0 + cx.acks) * hops.get(rs, rd);
            if rs != rd {
                out_bytes[rs as usize] += f.size as f64;
                in_bytes[rd as usize] += f.size as f64;
            }
        }
        let (mut inc_pkt_hops, mut inc_flows) = (0.0, 0.0);
        if let Some(i) = &w.incast {
            let reqs = (i.requests as f64).min(((sim_end - span.start_s) / span.inc_req_s.max(1e-12)).max(0.0).ceil());
            inc_pkt_hops = reqs * (i.request_bytes as f64 / cx.mss).ceil() * (1.0 + cx.acks) * span.inc_hops;
            inc_flows = reqs * i.fan_in as f64;
        }
        // jobs: every send of every step, split over the channels, for the
        // iterations that start before the run ends
        let mut job_pkt_hops = vec![];
        let mut job_flows = 0.0;
        for ((j, hosts), &(start, iter_s)) in sc.jobs.iter().zip(&cx.job_hosts).zip(&span.jobs) {
            let op = lbsim_workload::CollOp::from_name(&j.op).expect("validated");
            let iters = (j.iterations as f64).min(((sim_end - start) / iter_s.max(1e-12)).max(0.0).ceil());
            let (mut ph, mut sends) = (0.0, 0.0);
            for s in op.steps(hosts.len() as u32, j.size_bytes).iter().flatten() {
                let (a, b) = (hosts[s.from as usize], hosts[s.to as usize]);
                let ch = j.channels as f64;
                let pkts = ((s.bytes as f64 / ch / cx.mss).ceil() * ch).max(1.0);
                ph += pkts * (1.0 + cx.acks) * hops.get(topo.host_rack[a as usize], topo.host_rack[b as usize]);
                sends += ch;
            }
            job_pkt_hops.push(iters * ph);
            job_flows += iters * sends;
        }
        let mut udp_pkt_hops = vec![];
        for (k, u) in w.udp.iter().enumerate() {
            let cfg = &sc.udp[k];
            let from = cfg.start_ms / 1e3;
            let to = u.stop.as_secs_f64().min(sim_end);
            let dur = (to - from).max(0.0);
            let bits = 8.0 * u.size as f64;
            let sent = dur * u.rate.0 as f64 / bits;
            let through = dur * (u.rate.0 as f64).min(cx.line(cfg.src, cfg.dst)) / bits;
            udp_pkt_hops.push(sent + through * hops.get(topo.host_rack[cfg.src as usize], topo.host_rack[cfg.dst as usize]));
        }
        let pkt_hops = flow_pkt_hops + inc_pkt_hops + udp_pkt_hops.iter().sum::<f64>() + job_pkt_hops.iter().sum::<f64>();
        let n_flows = started as f64 + inc_flows + job_flows;
        let events = cx.ev_per_hop * pkt_hops + EVENTS_PER_FLOW * n_flows;
        let rss = RSS_BASE + RSS_PER_FLOW * (span.n as f64 + inc_flows.min(1e7)) + RSS_PER_PORT * topo.ports.len() as f64;
        // the key that decides the amount of work
        let mut heavy: (f64, String) = (flow_pkt_hops, flow_key(sc).to_string());
        if inc_pkt_hops > heavy.0 {
            heavy = (inc_pkt_hops, "workload.incast.requests".into());
        }
        for (k, &u) in udp_pkt_hops.iter().enumerate() {
            if u > heavy.0 {
                let c = &sc.udp[k];
                let beyond_line = w.udp[k].rate.0 as f64 > cx.line(c.src, c.dst);
                heavy = (u, format!("udp[{k}].{}", if c.stop_ms.is_some() && !beyond_line { "stop_ms" } else { "rate_gbps" }));
            }
        }
        for (k, &p) in job_pkt_hops.iter().enumerate() {
            if p > heavy.0 {
                heavy = (p, format!("jobs[{k}].iterations"));
            }
        }
        Work { started, out_bytes, in_bytes, pkt_hops, n_flows, events, wall_s: events / EVENTS_PER_S, rss, heavy: heavy.1 }
    }
}

/// Adds a warning naming `key`.
fn warn(warnings: &mut Vec<Value>, key: &str, msg: String) {
    warnings.push(json!({"key": key, "message": msg}));
}

/// The offered load of every rack against its uplinks and downlinks (one
/// row each), and the racks overloaded (warned about).
fn rack_loads(cx: &Ctx, span: &Span, work: &Work, warnings: &mut Vec<Value>) -> (Vec<Value>, Vec<String>) {
    let topo = cx.topo;
    let arrivals_s = span.last - span.first;
    let mut racks = vec![];
    let mut overloaded = vec![];
    for (r, &leaf) in topo.racks.iter().enumerate() {
        let (mut up, mut down) = (0u64, 0u64);
        for &p in &topo.nodes[leaf.idx()].ports {
            if topo.is_uplink(p) {
                up += topo.ports[p.idx()].rate.0;
                down += topo.ports[topo.ports[p.idx()].peer.idx()].rate.0;
            }
        }
        let name = topo.nodes[leaf.idx()].name.clone();
        let hosts_here = topo.host_rack.iter().filter(|&&x| x as usize == r).count();
        let (o, i) = if arrivals_s > 0.0 { (work.out_bytes[r] * 8.0 / arrivals_s, work.in_bytes[r] * 8.0 / arrivals_s) } else { (0.0, 0.0) };
        let (lu, ld) = (if up > 0 { o / up as f64 } else { 0.0 }, if down > 0 { i / down as f64 } else { 0.0 });
        if arrivals_s > 0.0 && (lu >= 1.0 || ld >= 1.0) {
            overloaded.push(format!(
                "{name} ({}{}{})",
                if lu >= 1.0 { format!("{:.2}x its uplinks", lu) } else { String::new() },
                if lu >= 1.0 && ld >= 1.0 { ", " } else { "" },
                if ld >= 1.0 { format!("{:.2}x its downlinks", ld) } else { String::new() }
            ));
        }
        racks.push(json!({
            "rack": r, "leaf": name, "hosts": hosts_here,
            "uplink_gbps": gbps(up as f64), "downlink_gbps": gbps(down as f64),
            "out_gbps": gbps(o), "in_gbps": gbps(i),
            "uplink_load": (lu * 1e4).round() / 1e4, "downlink_load": (ld * 1e4).round() / 1e4,
        }));
    }
    if !overloaded.is_empty() {
        let key = if cx.sc.workload.kind == WorkloadKind::Poisson { "workload.load" } else { "workload" };
        warn(warnings, key, format!("offered load exceeds capacity at {}: queues there grow without bound", overloaded.join(", ")));
    }
    (racks, overloaded)
}

/// Warnings for known traps: timers that fire spuriously, flows or requests
/// that cannot finish before the run stops, jitter as long as the run.
fn known_traps(cx: &Ctx, span: &Span, work: &Work, warnings: &mut Vec<Value>) {
    let (sc, stop_s, first, n) = (cx.sc, cx.stop_s, span.first, span.n);
    let tcp = &cx.b.w.tcp.cfg;
    if tcp.delack_count > 1 && tcp.min_rto <= tcp.delack_timeout {
        warn(
            warnings,
            "transport.min_rto_ms",
            format!(
                "transport.min_rto_ms ({} ms) is at or below transport.delayed_ack_timeout_us ({} us): a sender waiting for a delayed ACK times out spuriously",
                fmt_num(tcp.min_rto.as_ms_f64()),
                fmt_num(tcp.delack_timeout.as_us_f64())
            ),
        );
    }
    ecn_above_buffer(cx, warnings);
    udp_above_line(cx, warnings);
    let flows = &cx.b.w.arrivals;
    let cant_finish =
        flows.iter().filter(|f| f.start.as_secs_f64() < stop_s && f.start.as_secs_f64() + f.size as f64 * 8.0 / cx.line(f.src, f.dst) > stop_s).count();
    if cant_finish > 0 {
        let key = stop_key(sc, span.has_work);
        warn(
            warnings,
            if sc.workload.size_bytes.is_some() && span.largest.1 > stop_s - first { "workload.size_bytes" } else { key },
            format!(
                "{cant_finish} of {n} flows cannot finish before the run stops at {} ms even at line rate (the largest, {} bytes, needs {} ms); \
                 see {key}",
                fmt_num(stop_s * 1e3),
                fmt_num(span.largest.0 as f64),
                fmt_num(span.largest.1 * 1e3)
            ),
        );
    }
    if n > 0 && work.started == 0 {
        warn(
            warnings,
            if sc.workload.kind == WorkloadKind::Poisson { "workload.load" } else { stop_key(sc, span.has_work) },
            format!("no flow starts before the run stops at {} ms (first start {} ms)", fmt_num(stop_s * 1e3), fmt_num(first * 1e3)),
        );
    }
    let jitter_s = sc.network.host_jitter_ns.unwrap_or(1000.0) * 1e-9;
    if let Some(i) = &cx.b.w.incast {
        let need = i.requests as f64 * span.inc_req_s;
        if span.start_s + need > stop_s {
            warn(
                warnings,
                "workload.incast.requests",
                format!(
                    "workload.incast.requests ({}) need ~{} s even at the client's line rate; the run stops at {} s ({}) after ~{} of them",
                    i.requests,
                    fmt_num((need * 10.0).round() / 10.0),
                    fmt_num(stop_s),
                    stop_key(sc, span.has_work),
                    fmt_num(((stop_s - span.start_s) / span.inc_req_s).floor().max(0.0))
                ),
            );
        }
    }
    if span.has_work && stop_s > first && jitter_s >= 0.1 * (stop_s - first) {
        warn(
            warnings,
            "network.host_jitter_ns",
            format!(
                "host jitter of up to {} ms per packet against {} ms of run: few flows (perhaps none) can complete",
                fmt_num(jitter_s * 1e3),
                fmt_num((stop_s - first).max(0.0) * 1e3)
            ),
        );
    }
}

/// A UDP source sending faster than its source's link (or else its
/// destination's), which drops the excess, every dropped packet still
/// costing events, and makes the flows on that link wait behind a full queue.
pub(crate) struct UdpOverLine {
    /// `udp[k].rate_gbps`
    pub key: String,
    /// "udp[k].rate_gbps (R Gb/s) is above the link of its source, host h, H->L#0 (L Gb/s)"
    pub what: String,
    /// The host on that link, and whether it is the source.
    pub host: u32,
    pub at_source: bool,
    /// Share of the source's packets dropped there.
    pub dropped: f64,
}

/// Every UDP source above its link ([`UdpOverLine`]).
pub(crate) fn udp_over_line(topo: &Topology, cfgs: &[crate::scenario::UdpCfg], udp: &[crate::world::UdpSource]) -> Vec<UdpOverLine> {
    let mut out = vec![];
    for (k, (c, u)) in cfgs.iter().zip(udp).enumerate() {
        let up = topo.nic(u.src);
        let down = topo.ports[topo.nic(u.dst).idx()].peer;
        let (port, host, at_source) = if u.rate > topo.ports[up.idx()].rate {
            (up, c.src, true)
        } else if u.rate > topo.ports[down.idx()].rate {
            (down, c.dst, false)
        } else {
            continue;
        };
        let line = topo.ports[port.idx()].rate.0 as f64;
        out.push(UdpOverLine {
            key: format!("udp[{k}].rate_gbps"),
            what: format!(
                "udp[{k}].rate_gbps ({} Gb/s) is above the link of its {}, host {host}, {} ({} Gb/s)",
                fmt_num(c.rate_gbps),
                if at_source { "source" } else { "destination" },
                topo.ports[port.idx()].name,
                fmt_num(line / 1e9)
            ),
            host,
            at_source,
            dropped: 1.0 - line / u.rate.0 as f64,
        });
    }
    out
}

/// A warning for each UDP source above its link ([`udp_over_line`]).
fn udp_above_line(cx: &Ctx, warnings: &mut Vec<Value>) {
    for u in udp_over_line(cx.topo, &cx.sc.udp, &cx.b.w.udp) {
        let pct = fmt_num((100.0 * u.dropped).floor());
        warn(warnings, &u.key, format!("{}: {pct} % of its packets are dropped there and the flows on that link wait behind a full queue", u.what));
    }
}

/// A warning when ports should mark ECN but none can: a port marks a packet
/// that finds more than K queued and drops one that finds its buffer full,
/// so K at or above the buffer (less one packet) is never reached. Packets
/// and bytes compare at full-sized packets.
fn ecn_above_buffer(cx: &Ctx, warnings: &mut Vec<Value>) {
    use lbsim_net::Threshold;
    let full = cx.pkt_bits / 8.0;
    let bytes = |t: Threshold| match t {
        Threshold::Packets(p) => p as f64 * full,
        Threshold::Bytes(b) => b as f64,
    };
    let marking: Vec<_> = cx.b.w.ports.iter().filter_map(|q| q.ecn_threshold().map(|k| (k, q.limit()))).collect();
    let never = |&(k, limit): &(Threshold, Threshold)| match (k, limit) {
        (Threshold::Packets(k), Threshold::Packets(l)) => k as u64 + 1 >= l as u64,
        _ => bytes(k) + full > bytes(limit),
    };
    let Some(&(k, limit)) = marking.first() else { return };
    if !marking.iter().all(never) {
        return;
    }
    let n = &cx.sc.network;
    let key = if n.ecn_k_bytes.is_some() { "network.ecn_k_bytes" } else { "network.ecn_k_pkts" };
    let show = |t: Threshold| match t {
        Threshold::Packets(p) => format!("{p} packets"),
        Threshold::Bytes(b) => format!("{} bytes", fmt_num(b as f64)),
    };
    let given = if n.ecn_k_pkts.is_some() || n.ecn_k_bytes.is_some() { "" } else { ", the scheme's default" };
    let buffer = if n.buffer_bytes.is_some() { "network.buffer_bytes" } else { "network.buffer_pkts" };
    let default = if n.buffer_pkts.is_some() || n.buffer_bytes.is_some() { "" } else { ", the default" };
    warn(
        warnings,
        key,
        format!("{key} ({}{given}) is not below {buffer} ({}{default}) less one packet: no queue ever exceeds it, so no port marks ECN", show(k), show(limit)),
    );
}

/// One line for each way the scheme changes what an ECN-driven transport
/// (DCTCP, or `transport.ecn`) learns of the fabric's marks: a scheme that
/// clears CE before the transport sees it (its row's
/// [`lbsim_lb::GuestView`]), with the parameter that lets the marks
/// through. `validate`, `run` and `compare` print them; an invalid
/// parameter is left to the build's error.
pub fn scheme_notes(sc: &Scenario) -> Vec<Value> {
    let t = &sc.transport;
    let transport = match t.cc {
        lbsim_tcp::CongestionControl::Dctcp { .. } => "DCTCP",
        _ if t.ecn => "the ECN-capable transport (transport.ecn)",
        _ => return vec![],
    };
    let (Some(info), Ok(given)) = (lbsim_lb::scheme_info(&sc.lb.scheme), sc.lb_params()) else { return vec![] };
    match (info.clears_ce(&given), info.guest.ce_unless) {
        (Ok(true), Some(p)) => vec![json!({
            "key": format!("lb.params.{p}"),
            "message": format!("{} clears CE before {transport} sees it: {}; set lb.params.{p} = true to let the marks reach {transport}", info.name, info.guest.instead),
        })],
        _ => vec![],
    }
}

/// The explanation's JSON.
fn report(cx: &Ctx, span: &Span, work: &Work, racks: Vec<Value>, overloaded: Vec<String>, warnings: Vec<Value>) -> Value {
    let (sc, b, topo) = (cx.sc, cx.b, cx.topo);
    let (w, wl, info) = (&b.w, &sc.workload, &b.workload_info);
    let hosts = topo.num_hosts();
    json!({
        "scenario": sc.name,
        "seed": sc.seed,
        "scheme": sc.lb.scheme,
        "topology": {
            "kind": topo.kind, "hosts": hosts, "switches": topo.nodes.len() - hosts, "links": topo.links.len(), "ports": topo.ports.len(),
            "racks": topo.racks.len(), "base_rtt_us": b.rtt.as_secs_f64() * 1e6,
        },
        "workload": {
            "kind": wl.kind,
            "load": info.get("load"), "load_of": info.get("load_of"),
            "capacity_gbps": info.get("capacity_gbps"), "capacity_definition": info.get("capacity_definition"),
            "offered_gbps": info.get("offered_gbps"),
            "flows": span.n, "bytes": span.total_bytes,
            "first_start_ms": span.first * 1e3, "last_start_ms": span.last * 1e3,
            "incast_requests": w.incast.as_ref().map(|i| i.requests), "udp_sources": w.udp.len(),
        },
        "racks": racks,
        "overloaded": overloaded,
        "sim_time": {
            "stop_ms": cx.stop_s * 1e3,
            "stop_by": stop_key(sc, span.has_work),
            "expected_ms": span.sim_end * 1e3,
        },
        "estimate": {
            "packet_hops": work.pkt_hops.round(),
            "flows": work.n_flows,
            "events": work.events.round(),
            "wall_s": work.wall_s,
            "wall": duration(work.wall_s),
            "peak_rss_mb": (work.rss / 1e6).round(),
            "dominated_by": work.heavy,
            "model": format!("events = {} x packet-hops + {EVENTS_PER_FLOW} x flows; wall = events / {} M/s", cx.ev_per_hop, EVENTS_PER_S / 1e6),
            "calibration": CALIBRATION,
        },
        "warnings": warnings,
        "long_run": long_run(span, work),
        "notes": scheme_notes(sc),
    })
}

/// The warning about a run estimated above [`LONG_WARN_S`] of wall time,
/// naming the key that decides its work (null below): `run` and `validate`
/// give it before the first event unless `--allow-long`.
fn long_run(span: &Span, work: &Work) -> Value {
    if work.wall_s <= LONG_WARN_S {
        return Value::Null;
    }
    let key = &work.heavy;
    json!({
        "key": key,
        "message": format!(
            "{key}: this run is estimated at {} of wall time (~{:.2e} events at {} M events/s, {} ms simulated); reduce it, or pass --allow-long \
             (allow_long=True) to run it without this warning",
            duration(work.wall_s),
            work.events,
            EVENTS_PER_S / 1e6,
            fmt_num((span.sim_end * 1e3).round())
        ),
    })
}

/// Seconds as the largest unit that keeps the number readable: "~37 min".
fn duration(s: f64) -> String {
    let (v, unit) = match s {
        s if s < 120.0 => (s, "s"),
        s if s < 7200.0 => (s / 60.0, "min"),
        s if s < 2.0 * 86_400.0 => (s / 3600.0, "h"),
        s => (s / 86_400.0, "days"),
    };
    format!("~{} {unit}", fmt_num((v * 10.0).round() / 10.0))
}

/// The key that sets the run's stop time.
fn stop_key(sc: &Scenario, has_work: bool) -> &'static str {
    if sc.run.stop_ms.is_some() || !has_work || matches!(sc.workload.kind, WorkloadKind::Incast | WorkloadKind::Collective | WorkloadKind::Nothing) {
        "run.stop_ms"
    } else {
        "run.stop_after_last_start_ms"
    }
}

/// The key that decides how much open-loop work there is.
fn flow_key(sc: &Scenario) -> &'static str {
    let w = &sc.workload;
    match w.kind {
        WorkloadKind::FlowList => "workload.flow_list",
        WorkloadKind::Hpcc => "workload.file",
        _ if w.size_bytes.is_some() => "workload.size_bytes",
        _ if sc.run.stop_ms.is_some() => "run.stop_ms",
        _ => "workload.flows",
    }
}

/// The refusal of an explained scenario whose estimated wall time exceeds a
/// day ([`LONG_S`]), naming the key that decides the work.
pub fn too_long(explained: &Value) -> Option<ScenarioError> {
    let e = &explained["estimate"];
    let wall = e["wall_s"].as_f64()?;
    if wall <= LONG_S {
        return None;
    }
    Some(bad(
        e["dominated_by"].as_str().unwrap_or("workload"),
        format!(
            "this run would take about {} of wall time (~{:.2e} events at {} M events/s); reduce it, or pass --allow-long (allow_long=True) to run it anyway",
            duration(wall).trim_start_matches('~'),
            e["events"].as_f64().unwrap_or(0.0),
            EVENTS_PER_S / 1e6
        ),
    ))
}

/// After a run: if flows were left unfinished or none completed, the key
/// most likely responsible and a one-line message naming it.
pub(crate) fn unfinished_warning(
    sc: &Scenario,
    flows: &[crate::FlowRecord],
    end: SimTime,
    hard_stop: SimTime,
    stopped: bool,
    udp_over: &[UdpOverLine],
) -> Option<(String, String)> {
    let total = flows.len();
    let done = flows.iter().filter(|f| f.finish.is_some()).count();
    if total == 0 || done == total {
        return None;
    }
    let never = flows.iter().filter(|f| !f.started).count();
    let stop = stop_key(sc, true);
    let ms = |t: SimTime| fmt_num(t.as_secs_f64() * 1e3);
    let first = flows.iter().map(|f| f.start).min().unwrap_or(SimTime::ZERO);
    let head = format!("{} of {total} flows did not complete{}", total - done, if done == 0 { " (none did)" } else { "" });
    let jitter = SimTime::from_us_f64(sc.network.host_jitter_ns.unwrap_or(1000.0) / 1e3);
    let span = end.saturating_sub(first);
    // unfinished flows on the link of a UDP source above it
    let on_link = |u: &UdpOverLine| flows.iter().filter(|f| f.finish.is_none() && if u.at_source { f.src == u.host } else { f.dst == u.host }).count();
    let udp = udp_over.iter().map(|u| (u, on_link(u))).filter(|&(_, n)| n > 0).max_by_key(|&(_, n)| n);
    let (key, why) = if never == total {
        let key = match sc.workload.kind {
            WorkloadKind::FlowList => "workload.flow_list",
            WorkloadKind::Hpcc => "workload.file",
            WorkloadKind::Poisson if sc.run.stop_ms.is_none() => "workload.load",
            _ => stop,
        };
        (key, format!("no flow started before the run stopped at {} ms (the first starts at {} ms)", ms(end), ms(first)))
    } else if let Some((u, n)) = udp {
        (&*u.key, format!("{}, and {n} of them {} host {}", u.what, if u.at_source { "start at" } else { "go to" }, u.host))
    } else if jitter.as_secs_f64() >= 0.1 * span.as_secs_f64() {
        ("network.host_jitter_ns", format!("host jitter of up to {} ms per packet against {} ms of run", ms(jitter), ms(span)))
    } else if stopped || end >= hard_stop {
        let key = if sc.workload.kind == WorkloadKind::FlowList && never > 0 && sc.run.stop_ms.is_none() { "workload.flow_list" } else { stop };
        (key, format!("the run stopped at {} ms ({}), {never} flows never started", ms(end), key))
    } else {
        ("", format!("the run ran out of events at {} ms before its stop at {} ms (failed links? see the flows table)", ms(end), ms(hard_stop)))
    };
    let msg = if key.is_empty() { format!("{head}: {why}") } else { format!("{head}: {why}; see {key}") };
    Some((key.to_string(), msg))
}

#[cfg(test)]
mod tests {
    use crate::Scenario;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
    }

    #[test]
    fn wall_times_read_in_the_largest_readable_unit() {
        let d = super::duration;
        assert_eq!((d(90.0), d(2220.0), d(5.0 * 3600.0), d(3.25 * 86_400.0)), ("~90 s".into(), "~37 min".into(), "~5 h".into(), "~3.3 days".into()));
    }

    fn explain_file(rel: &str, sets: &[&str]) -> serde_json::Value {
        let text = std::fs::read_to_string(root().join(rel)).unwrap();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let sc = Scenario::from_toml(&text, &sets).unwrap();
        super::explain(&sc, root().join(rel).parent()).unwrap()
    }

    #[test]
    fn estimated_events_are_within_2x_of_the_counted() {
        // four shapes, cut short: a leaf-spine, a k = 8 fat-tree, a ring
        // all-reduce and RDMA (every packet acknowledged)
        let job = "jobs=[{name=\"ar\", ranks=16, placement=\"spread\", op=\"all_reduce\", size_bytes=4194304, iterations=1, gap_us=100}]";
        for (rel, sets) in [
            ("examples/b1.toml", ["workload.flows=300"]),
            ("examples/fat_tree_dctcp.toml", ["workload.flows=300"]),
            ("examples/allreduce_leafspine.toml", [job]),
            ("examples/rdma_dcqcn.toml", ["workload.flows=300"]),
        ] {
            let e = explain_file(rel, &sets);
            let est = e["estimate"]["events"].as_f64().unwrap();
            let text = std::fs::read_to_string(root().join(rel)).unwrap();
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let sc = Scenario::from_toml(&text, &sets).unwrap();
            let out = crate::run(&sc, root().join(rel).parent(), &mut |_| true).unwrap();
            let counted = out.summary["events"].as_f64().unwrap();
            assert!((0.5..2.0).contains(&(est / counted)), "{rel}: estimated {est} events, counted {counted}");
            // the wall time follows the events at one rate
            let wall = e["estimate"]["wall_s"].as_f64().unwrap();
            assert!((wall * super::EVENTS_PER_S / est - 1.0).abs() < 1e-6, "{rel}: {wall} s for {est} events");
        }
    }

    #[test]
    fn a_collective_run_is_estimated_from_its_jobs() {
        let e = explain_file("examples/allreduce_leafspine.toml", &[]);
        // 4 iterations of a 64 MiB ring all-reduce at 100G: ~10 ms each
        let ms = e["sim_time"]["expected_ms"].as_f64().unwrap();
        assert!((40.0..50.0).contains(&ms), "{ms}");
        assert_eq!(e["sim_time"]["stop_by"], "run.stop_ms");
        assert_eq!(e["estimate"]["dominated_by"], "jobs[0].iterations");
        assert!(e["estimate"]["events"].as_f64().unwrap() > 1e7, "{}", e["estimate"]);
        assert!(e["warnings"].as_array().unwrap().is_empty(), "{}", e["warnings"]);
    }

    #[test]
    fn min_rto_at_the_delayed_ack_timeout_is_a_warning() {
        let e = explain_file("examples/small.toml", &["transport.min_rto_ms=1", "transport.delayed_ack_timeout_us=1000", "workload.flows=50"]);
        let w = e["warnings"].as_array().unwrap();
        assert!(w.iter().any(|x| x["key"] == "transport.min_rto_ms"), "{w:?}");
    }

    #[test]
    fn an_ecn_threshold_no_queue_reaches_is_a_warning_naming_the_key() {
        let warned = |sets: &[&str]| {
            let e = explain_file("examples/small.toml", &[&["workload.flows=50", "network.buffer_pkts=500"], sets].concat());
            let w = e["warnings"].as_array().unwrap().clone();
            w.into_iter().find(|x| x["message"].as_str().unwrap().contains("no port marks ECN"))
        };
        let w = warned(&["network.ecn_k_pkts=900"]).expect("K = 900 on a 500-packet buffer");
        assert_eq!(w["key"], "network.ecn_k_pkts");
        assert!(w["message"].as_str().unwrap().starts_with("network.ecn_k_pkts (900 packets) is not below network.buffer_pkts (500 packets)"), "{w}");
        // a queue of 499 packets exceeds K = 498, none exceeds 499
        assert!(warned(&["network.ecn_k_pkts=498"]).is_none());
        assert!(warned(&["network.ecn_k_pkts=499"]).is_some());
        assert!(warned(&["network.ecn_k_pkts=20"]).is_none() && warned(&[]).is_none());
        // bytes against packets, at full-sized packets (1500 bytes on the wire)
        assert_eq!(warned(&["network.ecn_k_bytes=800000"]).expect("800 KB on 750 KB")["key"], "network.ecn_k_bytes");
        assert!(warned(&["network.ecn_k_bytes=300000"]).is_none());
    }

    #[test]
    fn a_day_of_work_is_refused_naming_the_key() {
        let e = explain_file("examples/incast.toml", &["workload.incast.requests=4294967295", "run.stop_ms=8e7", "topology.host_rate_gbps=100"]);
        let err = super::too_long(&e).expect("refused");
        assert_eq!(err.field, "workload.incast.requests", "{err}");
        let e = explain_file("examples/small.toml", &["workload.flows=100"]);
        assert!(super::too_long(&e).is_none());
    }

    #[test]
    fn a_udp_source_above_its_hosts_link_is_a_warning_naming_the_key_and_the_link() {
        let warned = |rate: &str| {
            let e = explain_file("examples/small.toml", &[&format!("udp=[{{src=1, dst=20, rate_gbps={rate}}}]")]);
            let w = e["warnings"].as_array().unwrap().iter().find(|x| x["key"] == "udp[0].rate_gbps").cloned();
            (w, e["sim_time"]["expected_ms"].as_f64().unwrap())
        };
        let (w, ms) = warned("1000");
        let m = w.expect("1000 Gb/s on a 10G host")["message"].as_str().unwrap().to_string();
        assert!(m.starts_with("udp[0].rate_gbps (1000 Gb/s) is above the link of its source, host 1, H1->L0#0 (10 Gb/s): 99 %"), "{m}");
        // host 1's flows wait behind it until the stop (20 s after the last start)
        assert!(ms > 20_000.0, "{ms}");
        let (w, ms) = warned("5");
        assert!(w.is_none() && ms < 1000.0, "{w:?} {ms}");
    }

    #[test]
    fn flows_left_behind_a_udp_source_above_its_link_name_it_after_the_run() {
        let udp = "udp=[{src=1, dst=20, rate_gbps=1000}]";
        let text = std::fs::read_to_string(root().join("examples/small.toml")).unwrap();
        let sets: Vec<String> = [udp, "workload.flows=200", "run.stop_ms=20"].iter().map(|s| s.to_string()).collect();
        let out = crate::run(&Scenario::from_toml(&text, &sets).unwrap(), None, &mut |_| true).unwrap();
        let stuck = out.flows.iter().filter(|f| f.src == 1 && f.finish.is_none()).count();
        assert!(stuck > 0, "host 1 sends no flow in this workload");
        let f = &out.summary["flows"];
        assert_eq!(f["warning_key"], "udp[0].rate_gbps", "{f}");
        let m = f["warning"].as_str().unwrap();
        assert!(m.contains("host 1, H1->L0#0 (10 Gb/s)") && m.contains(&format!("{stuck} of them start at host 1")), "{m}");
    }

    #[test]
    fn work_above_ten_minutes_is_a_long_run_warning_naming_the_key() {
        let e = explain_file("examples/incast.toml", &["workload.incast.requests=4294967295"]);
        let wall = e["estimate"]["wall_s"].as_f64().unwrap();
        assert!((super::LONG_WARN_S..super::LONG_S).contains(&wall), "{wall}");
        assert_eq!(e["long_run"]["key"], "workload.incast.requests");
        let m = e["long_run"]["message"].as_str().unwrap();
        assert!(m.starts_with("workload.incast.requests: this run is estimated at ~") && m.contains(" min of wall time") && m.contains("--allow-long"), "{m}");
        assert!(super::too_long(&e).is_none());
        assert!(explain_file("examples/incast.toml", &[])["long_run"].is_null());
    }

    #[test]
    fn a_run_gives_its_long_run_warning_before_the_first_event() {
        let text = std::fs::read_to_string(root().join("examples/incast.toml")).unwrap();
        let sc = Scenario::from_toml(&text, &["workload.incast.requests=4294967295".to_string()]).unwrap();
        let mut seen = serde_json::Value::Null;
        let mut events = 0;
        let mut start = |e: &serde_json::Value| {
            seen = e["long_run"].clone();
            false // stop before the first event
        };
        let out = crate::run_with(&sc, None, &crate::RunOptions::default(), Some(&mut start), &mut |p| {
            events = p.events;
            true
        });
        assert!(matches!(out, Err(crate::SimError::Interrupted)));
        assert_eq!((seen["key"].as_str(), events), (Some("workload.incast.requests"), 0));
    }

    #[test]
    fn a_hundred_thousand_explicit_links_validate_and_are_not_refused() {
        // what happens first: nothing is refused; setup (routes over the
        // parallel links) takes seconds, the run itself is tiny
        let mut t = String::from("[topology]\nkind = \"explicit\"\n");
        for (n, h) in [("h0", true), ("h1", true), ("s0", false), ("s1", false)] {
            t += &format!("[[topology.nodes]]\nname = \"{n}\"\nhost = {h}\n");
        }
        t += "[[topology.links]]\na = \"h0\"\nb = \"s0\"\nrate_gbps = 10\n[[topology.links]]\na = \"h1\"\nb = \"s1\"\nrate_gbps = 10\n";
        t += "[[topology.links]]\na = \"s0\"\nb = \"s1\"\nrate_gbps = 10\ncount = 99998\n";
        t += "[workload]\nkind = \"poisson\"\nflows = 10\nload_of = \"host_links\"\nload = 0.5\n";
        let sc = Scenario::from_toml(&t, &[]).unwrap();
        let e = super::explain(&sc, None).unwrap();
        assert_eq!(e["topology"]["links"], 100_000);
        assert!(super::too_long(&e).is_none());
    }
}
