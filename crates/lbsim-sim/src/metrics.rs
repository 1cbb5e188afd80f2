//! Metrics: per-flow records, the ideal (empty-network) FCT, samplers and
//! the run summary (the tables are described in docs/metrics.md).
//!
//! Percentiles are nearest-rank: the value at rank ⌈q·n⌉ of the sorted sample.
//! Unfinished flows are counted, never silently dropped: they appear in
//! the flow table with no finish time and in the summary's `unfinished`.

pub use crate::columns::FlowCounters;
use lbsim_engine::{BitsPerSec, Bytes, SimTime};
use lbsim_net::{NodeId, PortId, Routing, Topology};
use lbsim_tcp::TcpConfig;
use lbsim_workload::FlowSpec;
use serde_json::{json, Value};

/// One flow's record: what flows.parquet holds (its columns are declared
/// in [`crate::columns`]).
#[derive(Clone, Debug)]
pub struct FlowRecord {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start: SimTime,
    pub finish: Option<SimTime>,
    /// FCT of this flow alone in an empty network.
    pub ideal: SimTime,
    /// The flow's counters (while the flow runs, its connection's at its
    /// start; [`FlowRecord::close`] turns them into the flow's own).
    pub counters: FlowCounters,
    pub incast_request: Option<u32>,
    /// False for a flow whose arrival came after the run stopped.
    pub started: bool,
    /// Path record: how many distinct source-leaf uplinks the flow's
    /// connection used while it ran.
    pub uplinks_used: u32,
    /// Index of the flow's size class (`workload.classes`; 0 without).
    pub class: u8,
    /// The collective job, iteration and step the flow belongs to
    /// (`u32::MAX`: none).
    pub job: u32,
    pub job_iteration: u32,
    pub job_step: u32,
}

impl std::ops::Add for FlowCounters {
    type Output = FlowCounters;
    fn add(self, o: FlowCounters) -> FlowCounters {
        self.zip(o, |a, b| a + b)
    }
}

impl FlowRecord {
    /// A flow starting now on a connection whose counters read `base`
    /// (kept until [`FlowRecord::close`] turns them into the flow's own).
    pub fn new(spec: &FlowSpec, start: SimTime, ideal: SimTime, base: FlowCounters, incast_request: Option<u32>) -> FlowRecord {
        FlowRecord {
            src: spec.src,
            dst: spec.dst,
            size: spec.size,
            start,
            finish: None,
            ideal,
            counters: base,
            incast_request,
            started: true,
            uplinks_used: 0,
            class: spec.class,
            job: u32::MAX,
            job_iteration: u32::MAX,
            job_step: u32::MAX,
        }
    }

    /// The connection's counters now are `now`: the flow's are the growth
    /// since its start.
    pub fn close(&mut self, now: FlowCounters) {
        self.counters = now.zip(self.counters, |a, b| a - b);
    }

    pub fn fct(&self) -> Option<SimTime> {
        self.finish.map(|f| f - self.start)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LinkSample {
    /// End of the window.
    pub t: SimTime,
    pub port: PortId,
    /// Bytes transmitted in the window.
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct QueueSample {
    pub t: SimTime,
    pub port: PortId,
    pub pkts: u32,
    pub bytes: u64,
}

/// Packet accounting for the conservation check: every packet handed to a
/// port (`sent`) is, at the end, delivered (to a transport or absorbed by a
/// scheme), dropped, or still in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub sent: u64,
    pub sent_bytes: u64,
    /// Header bytes switches inserted into packets in flight, net of those
    /// they stripped (in-network tags): bytes sent + this = bytes delivered
    /// + dropped + in flight.
    pub lb_header_bytes: i64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub dropped_bytes: u64,
    pub drop_queue: u64,
    pub drop_injected: u64,
    pub drop_link: u64,
    pub drop_noroute: u64,
    pub drop_ttl: u64,
    /// Scheme probes that expired by design (traceroute TTLs): in
    /// `dropped` for the packet accounting, not in the reported drops.
    pub probe_expiries: u64,
    pub consumed_by_lb: u64,
    pub control_delivered: u64,
    pub stale_segments: u64,
}

/// One route from a host to another, hop by hop: (rate, propagation delay).
pub type PathProfile = Vec<(BitsPerSec, SimTime)>;

/// Every distinct (rate, delay) profile of the equal-cost routes from host
/// `src` to host `dst` (at most `Walk::MAX_PATHS` routes are walked; routes
/// with the same profile count once).
pub fn path_profiles(topo: &Topology, routing: &Routing, src: u32, dst: u32) -> Vec<PathProfile> {
    let mut walk = Walk { topo, routing, dst, dst_node: topo.host(dst), out: vec![], walked: 0, prof: PathProfile::new() };
    walk.descend(topo.nic(topo.host(src)));
    walk.out
}

/// A depth-first walk over the routes to one host, one profile buffer
/// extended and shortened hop by hop (a profile is copied only when it is
/// new). Next hops are taken last first; which routes the `MAX_PATHS` cut
/// keeps depends on this order, so changing it changes ideal FCTs.
struct Walk<'a> {
    topo: &'a Topology,
    routing: &'a Routing,
    dst: u32,
    dst_node: NodeId,
    out: Vec<PathProfile>,
    walked: usize,
    prof: PathProfile,
}

impl Walk<'_> {
    const MAX_PATHS: usize = 4096;
    /// The longest route followed (a guard against routing loops).
    const MAX_HOPS: usize = 64;

    /// Walks on from egress `port`; true once `MAX_PATHS` routes are walked.
    fn descend(&mut self, port: PortId) -> bool {
        let p = &self.topo.ports[port.idx()];
        self.prof.push((p.rate, p.delay));
        let next = self.topo.ports[p.peer.idx()].node;
        let done = if next == self.dst_node {
            self.walked += 1;
            if !self.out.contains(&self.prof) {
                self.out.push(self.prof.clone());
            }
            self.walked >= Self::MAX_PATHS
        } else {
            self.prof.len() < Self::MAX_HOPS && self.routing.next_hops(next, self.dst).iter().rev().any(|&n| self.descend(n))
        };
        self.prof.pop();
        done
    }
}

/// The FCT of `size` bytes alone in the idle network over the best of the
/// routes `profiles`: (with a handshake: one SYN/SYN-ACK round trip, then)
/// the first packet's store-and-forward latency over the path plus the
/// remaining packets back to back at the path's bottleneck rate. No slow
/// start: this is the line-rate lower bound pFabric/CONGA normalise by.
/// Zero when there is no route.
pub fn ideal_fct_over(profiles: &[PathProfile], tcp: &TcpConfig, size: u64, handshake: bool) -> SimTime {
    let mss = tcp.mss as u64;
    let hb = tcp.header_bytes as u64;
    let n = size.div_ceil(mss).max(1);
    let first = size.min(mss) + hb;
    let one = |hops: &PathProfile| {
        let mut t = SimTime::ZERO;
        for &(r, d) in hops {
            t += d + r.tx_time(Bytes(first));
        }
        let bottleneck = hops.iter().map(|h| h.0).min().unwrap();
        if n > 1 {
            let rest = size - size.min(mss) + (n - 1) * hb;
            t += bottleneck.tx_time(Bytes(rest));
        }
        if handshake {
            for &(r, d) in hops {
                t += (d + r.tx_time(Bytes(hb))) + (d + r.tx_time(Bytes(hb)));
            }
        }
        t
    };
    profiles.iter().map(one).min().unwrap_or(SimTime::ZERO)
}

/// [`ideal_fct_over`] every route from `src` to `dst` in `routing`.
pub fn ideal_fct(topo: &Topology, routing: &Routing, tcp: &TcpConfig, src: u32, dst: u32, size: u64, handshake: bool) -> SimTime {
    ideal_fct_over(&path_profiles(topo, routing, src, dst), tcp, size, handshake)
}

/// Mean and nearest-rank percentiles of a sample.
pub fn describe(v: &mut [f64]) -> Value {
    describe_with(v, &[])
}

/// [`describe`] plus the percentiles `extra` (in percent, e.g. 99.99 as
/// `"p99_99"`; nearest-rank, like the fixed ones).
pub fn describe_with(v: &mut [f64], extra: &[f64]) -> Value {
    let mut out = if v.is_empty() {
        json!({"n": 0, "mean": null, "p50": null, "p95": null, "p99": null, "max": null})
    } else {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        json!({"n": n, "mean": mean, "p50": nearest_rank(v, 0.50), "p95": nearest_rank(v, 0.95), "p99": nearest_rank(v, 0.99), "max": v[n - 1]})
    };
    for &q in extra {
        // multiplied first so that 99.9 % of 10,000 is 9,990
        out[percentile_key(q)] = if v.is_empty() { Value::Null } else { json!(at_rank(v, (q * v.len() as f64) / 100.0)) };
    }
    out
}

/// The nearest-rank `q`-quantile (q in (0, 1]) of sorted, non-empty `v`
/// (the one rule: docs/metrics.md; Python's `lbsim.stats.nearest_rank`).
fn nearest_rank(v: &[f64], q: f64) -> f64 {
    at_rank(v, q * v.len() as f64)
}

/// The value of sorted, non-empty `v` at rank ceil(x) (1-based), x snapped
/// to an integer within rounding error (99.9 % of 41,000 is 40,959).
fn at_rank(v: &[f64], x: f64) -> f64 {
    let rank = if (x - x.round()).abs() <= 1e-9 * x.max(1.0) { x.round() } else { x.ceil() } as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// "p99_99" for 99.99, "p90" for 90 (no dot: summary keys are addressed
/// by dotted paths, e.g. `fct_us.p99_99`).
pub fn percentile_key(q: f64) -> String {
    format!("p{}", lbsim_engine::fmt_num(q).replace('.', "_"))
}

/// FCT (µs) and slowdown statistics of each flow class (`names[i]` is
/// class i's name), with counts of flows, completed and unfinished.
pub fn class_summary(flows: &[FlowRecord], names: &[String], extra: &[f64]) -> Vec<Value> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let all: Vec<&FlowRecord> = flows.iter().filter(|f| f.class as usize == i).collect();
            let mut fct: Vec<f64> = all.iter().filter_map(|f| f.fct()).map(|t| t.as_us_f64()).collect();
            let mut slow: Vec<f64> = all.iter().filter(|f| f.ideal > SimTime::ZERO).filter_map(|f| f.fct().map(|t| t.0 as f64 / f.ideal.0 as f64)).collect();
            json!({
                "class": name,
                "flows": all.len(),
                "completed": fct.len(),
                "unfinished": all.len() - fct.len(),
                "fct_us": describe_with(&mut fct, extra),
                "slowdown": describe_with(&mut slow, extra),
            })
        })
        .collect()
}

/// FCT (µs) and slowdown statistics overall and per size bucket.
pub fn fct_summary(flows: &[FlowRecord], edges: &[u64], extra: &[f64]) -> (Value, Value, Vec<Value>) {
    let done: Vec<&FlowRecord> = flows.iter().filter(|f| f.finish.is_some()).collect();
    let fct = |fs: &[&FlowRecord]| -> Vec<f64> { fs.iter().map(|f| f.fct().unwrap().as_us_f64()).collect() };
    let slow =
        |fs: &[&FlowRecord]| -> Vec<f64> { fs.iter().filter(|f| f.ideal > SimTime::ZERO).map(|f| f.fct().unwrap().0 as f64 / f.ideal.0 as f64).collect() };
    let mut buckets = vec![];
    let mut lo = 0u64;
    for i in 0..=edges.len() {
        let hi = edges.get(i).copied();
        let name = match (i, hi) {
            (0, Some(h)) => format!("<{}", human(h)),
            (_, Some(h)) => format!("{}-{}", human(lo), human(h)),
            (_, None) => format!(">{}", human(lo)),
        };
        let inb = |s: u64| s >= lo && hi.is_none_or(|h| s < h);
        let all = flows.iter().filter(|f| inb(f.size)).count();
        let d: Vec<&FlowRecord> = done.iter().copied().filter(|f| inb(f.size)).collect();
        buckets.push(json!({
            "bucket": name,
            "min_bytes": lo,
            "max_bytes": hi,
            "flows": all,
            "completed": d.len(),
            "unfinished": all - d.len(),
            "fct_us": describe_with(&mut fct(&d), extra),
            "slowdown": describe_with(&mut slow(&d), extra),
        }));
        if let Some(h) = hi {
            lo = h;
        }
    }
    (describe_with(&mut fct(&done), extra), describe_with(&mut slow(&done), extra), buckets)
}

fn human(b: u64) -> String {
    if b >= 1_000_000 && b.is_multiple_of(1_000_000) {
        format!("{}MB", b / 1_000_000)
    } else if b >= 1000 && b.is_multiple_of(1000) {
        format!("{}KB", b / 1000)
    } else {
        format!("{b}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        let d = describe(&mut v);
        assert_eq!(d["p50"], 50.0);
        assert_eq!(d["p99"], 99.0);
        assert_eq!(d["mean"], 50.5);
        let mut one = vec![7.0];
        assert_eq!(describe(&mut one)["p99"], 7.0);
    }

    #[test]
    fn buckets_split_at_the_edges_and_count_unfinished() {
        let f = |size, fin: Option<u64>| FlowRecord {
            src: 0,
            dst: 1,
            size,
            start: SimTime::ZERO,
            finish: fin.map(SimTime::from_us),
            ideal: SimTime::from_us(1),
            counters: Default::default(),
            incast_request: None,
            started: true,
            uplinks_used: 0,
            class: 0,
            job: u32::MAX,
            job_iteration: u32::MAX,
            job_step: u32::MAX,
        };
        let flows = vec![f(10, Some(5)), f(100_000, Some(50)), f(20_000_000, None)];
        let (all, _, b) = fct_summary(&flows, &[100_000, 10_000_000], &[99.99]);
        assert_eq!(all["n"], 2);
        assert_eq!(b[0]["bucket"], "<100KB");
        assert_eq!(b[0]["completed"], 1);
        assert_eq!(b[1]["bucket"], "100KB-10MB");
        assert_eq!(b[1]["completed"], 1);
        assert_eq!(b[2]["bucket"], ">10MB");
        assert_eq!(b[2]["unfinished"], 1);
        assert_eq!(b[2]["fct_us"]["p99_99"], Value::Null, "no completed flow");
        assert!(all.get("p99_99").is_some());
    }

    #[test]
    fn extra_percentiles_are_nearest_rank_like_the_fixed_ones() {
        let mut v: Vec<f64> = (1..=10_000).rev().map(|x| x as f64).collect();
        let d = describe_with(&mut v, &[99.99, 99.9, 90.0]);
        // nearest rank: ceil(q n)-th smallest
        assert_eq!(d["p99_99"], 9_999.0);
        assert_eq!(d["p99_9"], 9_990.0);
        assert_eq!(d["p90"], 9_000.0);
        let mut w: Vec<f64> = (1..=41_000).map(|x| x as f64).collect();
        assert_eq!(describe_with(&mut w, &[99.9])["p99_9"], 40_959.0);
        assert_eq!(d["p99"], 9_900.0);
        assert_eq!(d["max"], 10_000.0);
        let mut few = vec![3.0, 1.0, 2.0];
        assert_eq!(describe_with(&mut few, &[99.99])["p99_99"], 3.0);
    }
}

/// Flowlet sizes as a packet trace at the senders' NICs would show them
/// (CONGA §2.6, Fig. 5): per TCP connection (5-tuple) and direction, data
/// bytes leaving the host are grouped into flowlets separated by idle gaps
/// longer than each configured gap, timed by when the last bit of each
/// segment leaves the NIC. Independent of any scheme's own flowlet table.
#[derive(Debug, Default)]
pub struct FlowletObserver {
    pub gaps: Vec<SimTime>,
    /// per connection (dense ids), per gap: last departure and bytes of the open flowlet
    open: Vec<Vec<(SimTime, u64)>>,
    /// per gap: sizes of closed flowlets, bytes
    sizes: Vec<Vec<u64>>,
}

impl FlowletObserver {
    pub fn new(gaps: Vec<SimTime>) -> FlowletObserver {
        let n = gaps.len();
        FlowletObserver { gaps, open: Vec::new(), sizes: vec![Vec::new(); n] }
    }

    /// A data segment of connection `conn` (one per direction of data) left
    /// its host's NIC at `t` carrying `bytes`.
    pub fn segment(&mut self, conn: u32, t: SimTime, bytes: u64) {
        let n = self.gaps.len();
        if self.open.len() <= conn as usize {
            self.open.resize(conn as usize + 1, Vec::new());
        }
        let st = &mut self.open[conn as usize];
        if st.is_empty() {
            st.resize(n, (SimTime::ZERO, 0));
        }
        for (i, (last, acc)) in st.iter_mut().enumerate() {
            if *acc > 0 && t > *last + self.gaps[i] {
                self.sizes[i].push(*acc);
                *acc = 0;
            }
            *last = t;
            *acc += bytes;
        }
    }

    /// Per gap: flowlet count and the byte-weighted quantiles of flowlet
    /// size ("x % of the bytes are in flowlets smaller than ...", Fig. 5).
    pub fn summary(&self) -> Value {
        let mut sizes = self.sizes.clone();
        for st in &self.open {
            for (i, &(_, acc)) in st.iter().enumerate() {
                if acc > 0 {
                    sizes[i].push(acc);
                }
            }
        }
        let rows: Vec<Value> = self
            .gaps
            .iter()
            .zip(sizes.iter_mut())
            .map(|(g, v)| {
                v.sort_unstable();
                let total: u64 = v.iter().sum();
                let q = |f: f64| {
                    let target = f * total as f64;
                    let mut c = 0u64;
                    for &x in v.iter() {
                        c += x;
                        if c as f64 >= target {
                            return x;
                        }
                    }
                    0
                };
                json!({"gap_us": g.as_secs_f64() * 1e6, "flowlets": v.len(), "bytes": total,
                       "bytes_weighted_p10": q(0.1), "bytes_weighted_p50": q(0.5), "bytes_weighted_p90": q(0.9)})
            })
            .collect();
        json!(rows)
    }
}

/// A packet captured on a `metrics.pcap_ports` port: the header fields a
/// pcap writer needs (hosts as host indices).
#[derive(Clone, Copy, Debug)]
pub struct CapturedPacket {
    /// When its transmission started.
    pub t: SimTime,
    pub port: u32,
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub outer_sport: Option<u16>,
    /// "tcp", "udp", "rdma" (RoCEv2: `seq` is the PSN, `flags` 0 data / 1
    /// ACK / 2 NACK, `ack` the CNP flag, `wnd` the queue pair), "pfc"
    /// (`flags` 1 pause / 0 resume) or "control".
    pub kind: &'static str,
    pub size: u32,
    pub ttl: u8,
    /// The ECN field as the network sees it (the outer header of an
    /// encapsulated packet): ECT as the sender or its edge set it, CE once
    /// a port marked it.
    pub ect: bool,
    pub ce: bool,
    /// ECT as the sending transport set it (RFC 3168 §6.1.4: segments with
    /// payload of an ECN-capable transport): the inner header of an
    /// encapsulated packet.
    pub inner_ect: bool,
    pub seq: u64,
    pub ack: u64,
    pub flags: u8,
    pub wnd: u32,
    pub len: u32,
    /// Timestamp option (RFC 7323): the sender's clock and the echo.
    pub ts_val: SimTime,
    pub ts_ecr: SimTime,
    /// SACK blocks `[start, end)` in lbsim sequence numbers; `n_sack` used.
    pub sack: [(u64, u64); lbsim_tcp::header::MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// The run's TCP uses SACK (`transport.sack`): SYNs offer SACK-permitted.
    pub sack_ok: bool,
}

/// One iteration of a collective job: what jobs.parquet holds (its columns
/// are declared in [`crate::columns`]).
#[derive(Clone, Debug)]
pub struct JobRecord {
    pub job: u32,
    pub name: String,
    pub op: &'static str,
    pub ranks: u32,
    pub size: u64,
    pub channels: u32,
    pub iteration: u32,
    pub start: SimTime,
    /// When its last flow finished (None: unfinished when the run stopped).
    pub end: Option<SimTime>,
    /// The iteration on the idle non-blocking fabric: the sum of its steps'.
    pub ideal: SimTime,
    /// busbw / algbw (2(n-1)/n for all-reduce, (n-1)/n for the others).
    pub bus_factor: f64,
}

impl JobRecord {
    pub fn time(&self) -> Option<SimTime> {
        self.end.map(|e| e - self.start)
    }
    /// Algorithm bandwidth over `t`, Gb/s: size / t.
    pub fn algbw_gbps(&self, t: SimTime) -> f64 {
        self.size as f64 * 8.0 / t.as_secs_f64() / 1e9
    }
}

/// One step of one iteration of a collective job (steps.parquet).
#[derive(Clone, Debug)]
pub struct StepRecord {
    pub job: u32,
    pub iteration: u32,
    pub step: u32,
    /// The first of the step's flows' starts (None: no rank reached it).
    pub start: Option<SimTime>,
    /// The last of its flows' finishes (None: some unfinished).
    pub end: Option<SimTime>,
    pub ideal: SimTime,
    pub flows: u32,
    pub flows_done: u32,
    pub bytes: u64,
    /// The finished flow with the longest FCT, its FCT, ends, and the
    /// source-leaf uplink its connection last sent data on with the number
    /// of uplinks the connection used (1 for a flow pinned to one path).
    pub slowest: Option<u32>,
    pub slowest_fct: SimTime,
    pub slowest_src: u32,
    pub slowest_dst: u32,
    pub slowest_uplink: Option<String>,
    pub slowest_uplinks_used: u32,
}

impl StepRecord {
    /// Step time, last finish - first start (None: unfinished).
    pub fn time(&self) -> Option<SimTime> {
        self.start.zip(self.end).map(|(a, b)| b - a)
    }
}
