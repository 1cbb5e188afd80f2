//! AG (Liu et al., "AG: Adaptive Switching Granularity for Load Balancing
//! with Asymmetric Topology in Data Center Network", 2019): packet trains
//! whose size the source leaf adapts to how asymmetric its paths are.
//! Leaves only; spines forward as ECMP; hosts are untouched.
//!
//! - **Latency measurement** (§V, Algorithm 1): every T, for each
//!   (destination leaf d, uplink k), the next data packet the source leaf
//!   sends to d on k becomes a probe ("only a few data packets are selected
//!   as the probe packets", §III; we treat ACKs alike, which the paper does
//!   not, docs/schemes/ag.md §1.7): an AG header with the leaf's arrival time
//!   (`ingress_global_timestamp` in the P4 prototype). The destination leaf
//!   computes the one-way delay and returns it on the next packet it sends
//!   toward the source leaf out of the port the probe came in on (no
//!   reverse packet, no feedback); the source leaf files it under the
//!   uplink the feedback arrives on. A packet carries one role: a packet
//!   already carrying feedback is not made a probe (the probe waits for the
//!   next one). The AG header is typed and never touches the guest's TCP
//!   timestamps (the paper reuses the TCP timestamp field; its P4 prototype
//!   adds an option, §VII).
//! - **Packet-train adjustment** (§IV): every T, per destination leaf, paths
//!   whose delay exceeds the mean over the measured paths are congested
//!   (M_b of M); the train size gran* maximises the model rate r(gran) of
//!   eqs. (1)–(7) ([`model`]). The paper searches [1, 44] by bisection; r is
//!   not unimodal, so by default we take the exhaustive argmax (`search =
//!   "bisect"` gives the paper's literal search).
//! - **Packet-train scheduling** (§III.3, §IV-B): per flow (hashed table),
//!   the first packet of a train goes to a uniformly random uplink and the
//!   next gran* − 1 packets follow it; a new gran* applies at once to every
//!   flow's current train.
//!
//! - **Adaptive T** (§VI-D, `adaptive_window_ms` > 0): the paper samples
//!   "the RTT of each packet" of every path during a window (its test: the
//!   first 10 ms), calls a path congested at a sample above the path's
//!   average, takes T_avg = the mean time between state changes, T_min =
//!   the smallest over all paths, and T = 0.5 T_min (Nyquist). Ours, where
//!   the paper leaves it open: the samples are AG's own one-way delays,
//!   with every data packet made a probe during the window (a packet owing
//!   feedback carries that instead, so with two-way traffic about half
//!   are), each timed when its feedback reaches the source leaf; each leaf
//!   learns its own T from its paths (the paper's "switch"); congested
//!   means above the mean by more than `congested_margin_us` (0, as the
//!   paper); T is clamped to [10 us, 10 ms] (docs/schemes/ag.md
//!   §1.6); a leaf none of whose paths changed state twice keeps
//!   `sample_interval_us`; a run learns once (the paper repeats "the 1st
//!   second in every one hour").
//!
//! Model inputs where the paper is silent (docs/schemes/ag.md §1.4, our
//! choices): RTT_x = base RTT + mean over the class's paths of (OWD −
//! smallest OWD seen toward that leaf); a class with no member takes the
//! other's; paths not measured within `owd_max_age_us` are left out of the
//! mean and count as uncongested; before any measurement gran* = 1.

use crate::params::{num, DefaultValue, ParamDef, ParamError, Params};
use crate::SchemeEnv;
use lbsim_engine::{Bytes, SimTime};
use lbsim_net::{Ctx, Forward, LbHeader, LoadBalancer, NodeId, PktId, PortId, ReportTable, ReportValue, Tier, Topology};

/// The model of §IV-A, eqs. (1)–(7), as pure functions.
pub mod model {
    /// Inputs of r(gran).
    #[derive(Clone, Copy, Debug)]
    pub struct Input {
        /// Paths M and congested paths M_b.
        pub paths: u32,
        pub congested: u32,
        /// RTT of an uncongested and of a congested path, seconds.
        pub rtt_g_s: f64,
        pub rtt_b_s: f64,
        /// Maximum window W in packets (paper: 64 KB, about 44 packets),
        /// also the largest train.
        pub window_pkts: u32,
        pub pkt_bytes: u32,
        /// Per-path link bandwidth C, bit/s.
        pub path_bps: f64,
    }

    /// Eq. (1): probability that a window of `x` trains is reordered when a
    /// train picks a congested path with probability `p_b`.
    pub fn reorder_probability(x: u32, p_b: f64) -> f64 {
        let p_g = 1.0 - p_b;
        // (a fold from +0.0: an empty sum, X = 1, is 0 and not -0.0)
        (1..x).map(|i| p_g.powi(i as i32 - 1) * p_b * (1.0 - p_b.powi((x - i) as i32))).fold(0.0, |a, b| a + b)
    }

    /// Eq. (6): the average rate r(gran) in bit/s (X = ⌈W / gran⌉ trains).
    pub fn rate(gran: u32, m: &Input) -> f64 {
        let x = m.window_pkts.div_ceil(gran.max(1));
        let p_b = m.congested as f64 / m.paths.max(1) as f64;
        let p_g = 1.0 - p_b;
        let p = reorder_probability(x, p_b);
        let w = m.window_pkts as f64 * m.pkt_bytes as f64 * 8.0;
        let w0 = (1.0 - p) * w + p * w / 2.0; // eq. (4)
        let all_good = p_g.powi(x as i32);
        let rtt = w / (x as f64 * m.path_bps) + all_good * m.rtt_g_s + (1.0 - all_good) * m.rtt_b_s; // eq. (5)
        w0 / rtt
    }

    /// How gran* is searched for.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Search {
        /// The argmax over 1..=W (ties: the smallest train).
        Exhaustive,
        /// The paper's binary search on [1, W] (§IV-B): toward the side
        /// where r grows. r is not unimodal, so this can miss the argmax.
        Bisect,
    }

    /// Eq. (7): the optimal train size in packets.
    pub fn optimal_granularity(m: &Input, search: Search) -> u32 {
        let w = m.window_pkts.max(1);
        match search {
            Search::Exhaustive => {
                let mut best = (1, rate(1, m));
                for g in 2..=w {
                    let r = rate(g, m);
                    if r > best.1 {
                        best = (g, r);
                    }
                }
                best.0
            }
            Search::Bisect => {
                let (mut lo, mut hi) = (1, w);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if rate(mid, m) < rate(mid + 1, m) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        }
    }
}

use model::{Input, Search};

pub const PARAMS: &[ParamDef] = &[
    num("sample_interval_us", "us", 500.0, "T: probe marking and granularity update period (§IV-B: 500 us)"),
    num("window_pkts", "packets", 44.0, "W: maximum window, also the largest train (§IV-A: 64 KB, about 44 packets)"),
    ParamDef {
        name: "search",
        unit: "",
        default: DefaultValue::Str("exhaustive"),
        help: "\"exhaustive\": argmax of r over 1..W (our default: r is not unimodal); \"bisect\": the paper's binary search",
    },
    num("owd_max_age_us", "us", 5000.0, "a path delay not refreshed for this long is left out (our choice: 10 T)"),
    num("congested_margin_us", "us", 0.0, "a path is congested when its delay exceeds the mean by more than this (paper: 0)"),
    num("flow_table_size", "entries", 65536.0, "per-leaf flow table for train state (hashed; §VII uses CRC16)"),
    num("fixed_granularity_pkts", "packets", 0.0, "0: adapt the train size (AG); n > 0: every train is n packets (Fig. 8's fixed-granularity runs)"),
    num("adaptive_window_ms", "ms", 0.0, "0: T fixed at sample_interval_us; w > 0: each leaf learns T = 0.5 T_min from the congestion-state changes of its paths in the first w ms, every data packet a probe meanwhile (§VI-D: 10 ms)"),
];

/// Bounds of a learned sample interval (our choice; the paper gives none).
pub const ADAPTIVE_T_MIN: SimTime = SimTime(10_000_000);
pub const ADAPTIVE_T_MAX: SimTime = SimTime(10_000_000_000);

/// §VI-D's statistic for one path: its delay samples `(arrival, delay)` in
/// arrival order, each congested when above the mean over all of them (by
/// more than `margin`, as the train-size update); returns the mean time
/// between consecutive congestion-state changes, or None with fewer than
/// two changes.
pub fn mean_state_period(samples: &[(SimTime, SimTime)], margin: SimTime) -> Option<SimTime> {
    if samples.len() < 3 {
        return None;
    }
    let mean = samples.iter().map(|s| s.1 .0 as f64).sum::<f64>() / samples.len() as f64;
    let congested = |s: &(SimTime, SimTime)| s.1 .0 as f64 > mean + margin.0 as f64;
    let changes: Vec<SimTime> = samples.windows(2).filter(|w| congested(&w[0]) != congested(&w[1])).map(|w| w[1].0).collect();
    match (changes.first(), changes.last()) {
        (Some(&a), Some(&b)) if changes.len() >= 2 => Some(SimTime((b.0 - a.0) / (changes.len() as u64 - 1))),
        _ => None,
    }
}

/// The learned T of a leaf: half the shortest mean state period over its
/// paths, clamped to [`ADAPTIVE_T_MIN`], [`ADAPTIVE_T_MAX`]; None if no path
/// changed state twice.
pub fn adaptive_interval<'a>(paths: impl IntoIterator<Item = &'a [(SimTime, SimTime)]>, margin: SimTime) -> Option<SimTime> {
    let t_min = paths.into_iter().filter_map(|p| mean_state_period(p, margin)).min()?;
    Some(SimTime(t_min.0 / 2).max(ADAPTIVE_T_MIN).min(ADAPTIVE_T_MAX))
}

#[derive(Clone, Copy, Debug, Default)]
struct Train {
    port: u32,
    len: u32,
    valid: bool,
}

#[derive(Clone, Copy, Debug)]
struct Owd {
    value: SimTime,
    at: SimTime,
    /// Size of the packet that measured it (for the truth beside it).
    bytes: u16,
}

/// Bytes per (source leaf, destination leaf, uplink) and per leaf pair
/// (for the memory check before a run; the sample lists only while T is
/// being learned, counted always).
pub const PATH_STATE_BYTES: usize = std::mem::size_of::<Option<Owd>>() + std::mem::size_of::<Option<(SimTime, u16)>>() + 1 + std::mem::size_of::<Vec<u32>>();
pub const PAIR_STATE_BYTES: usize = 8 + 4 + 4 + 1;
/// Bytes per entry of a leaf's train table (`flow_table_size` entries).
pub const TRAIN_BYTES: usize = std::mem::size_of::<Train>();
/// Largest `flow_table_size`.
pub const MAX_FLOW_TABLE: u64 = 1 << 24;

pub struct Ag {
    /// Per leaf: its sample interval T (all `sample_interval_us` unless learned).
    t: Vec<SimTime>,
    /// Adaptive T: learning ends at this time (ZERO: off); per leaf whether
    /// it has learned and whether that changed its T (not when no path
    /// changed state twice); per [src][dst][uplink] the delays returned so far.
    learn_until: SimTime,
    learned: Vec<bool>,
    adapted: Vec<bool>,
    samples: Vec<Vec<(SimTime, SimTime)>>,
    window: u32,
    search: Search,
    max_age: SimTime,
    margin: SimTime,
    table_size: usize,
    fixed: u32,
    base_rtt: SimTime,
    pkt_bytes: u32,
    n_leaves: usize,
    /// Per leaf (rack index): its uplinks; a path is an uplink's position.
    uplinks: Vec<Vec<PortId>>,
    /// Per port: its position among its leaf's uplinks.
    up_index: Vec<u32>,
    max_up: usize,
    /// [src leaf][dst leaf][uplink] last one-way delay.
    owd: Vec<Option<Owd>>,
    /// [src leaf][dst leaf] smallest delay ever seen.
    floor: Vec<SimTime>,
    /// [src leaf][dst leaf][uplink] a probe is due.
    probe_due: Vec<bool>,
    /// [dst leaf][src leaf][uplink] delay to return, measured at `dst`, and
    /// the size of the probe's packet (simulator-only, for the truth).
    pending: Vec<Option<(SimTime, u16)>>,
    /// [src leaf][dst leaf] current train size, congested paths at the last
    /// update, and whether any path has been measured.
    gran: Vec<u32>,
    congested: Vec<u32>,
    measured: Vec<bool>,
    trains: Vec<Vec<Train>>,
    pub probes: u64,
    pub feedbacks_sent: u64,
    pub feedbacks_received: u64,
    pub trains_started: u64,
    trains_by_port: Vec<u64>,
    /// Trains that ended with exactly the train size in force, and shorter.
    pub full_trains: u64,
    pub short_trains: u64,
    /// Sum over updates of gran* and of M_b, and the update count (pairs with measurements).
    pub gran_sum: u64,
    pub congested_sum: u64,
    pub updates: u64,
}

impl Ag {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Ag, ParamError> {
        let topo = env.topo;
        if topo.kind != "leaf_spine" {
            return Err(ParamError { key: "scheme".into(), msg: format!("ag runs on 2-tier leaf-spine fabrics (AG §III); this topology is {}", topo.kind) });
        }
        let n = topo.racks.len();
        let (uplinks, up_index) = topo.leaf_uplinks();
        let max_up = uplinks.iter().map(|u| u.len()).max().unwrap_or(0).max(1);
        if max_up > 64 {
            // a path's id in the scheme samples is destination leaf x 64 + uplink
            return Err(ParamError { key: "topology".into(), msg: format!("ag handles at most 64 uplinks per leaf; a leaf here has {max_up}") });
        }
        let learn_until = p.duration("adaptive_window_ms", true)?;
        Ok(Ag {
            t: vec![p.duration("sample_interval_us", false)?; n],
            learn_until,
            learned: vec![false; n],
            adapted: vec![false; n],
            samples: if learn_until > SimTime::ZERO { vec![vec![]; n * n * max_up] } else { vec![] },
            window: p.count("window_pkts", 4096)? as u32,
            search: if p.string("search", &["exhaustive", "bisect"])? == "bisect" { Search::Bisect } else { Search::Exhaustive },
            max_age: p.duration("owd_max_age_us", false)?,
            margin: p.duration("congested_margin_us", true)?,
            table_size: p.count("flow_table_size", MAX_FLOW_TABLE)? as usize,
            fixed: {
                let f = p.non_negative("fixed_granularity_pkts")?;
                if f.fract() != 0.0 || f > 4096.0 {
                    return Err(ParamError {
                        key: "fixed_granularity_pkts".into(),
                        msg: format!("must be 0 or a whole number up to 4096, got {}", lbsim_engine::fmt_num(f)),
                    });
                }
                f as u32
            },
            base_rtt: env.base_rtt,
            // the model's packets on the wire: MSS + 52 B of TCP/IP headers with timestamps
            pkt_bytes: env.mss + 52,
            n_leaves: n,
            uplinks,
            up_index,
            max_up,
            owd: vec![None; n * n * max_up],
            floor: vec![SimTime::MAX; n * n],
            probe_due: vec![false; n * n * max_up],
            pending: vec![None; n * n * max_up],
            gran: vec![1; n * n],
            congested: vec![0; n * n],
            measured: vec![false; n * n],
            trains: vec![vec![]; n],
            probes: 0,
            feedbacks_sent: 0,
            feedbacks_received: 0,
            trains_started: 0,
            trains_by_port: vec![0; topo.ports.len()],
            full_trains: 0,
            short_trains: 0,
            gran_sum: 0,
            congested_sum: 0,
            updates: 0,
        })
    }

    fn idx(&self, a: usize, b: usize, k: usize) -> usize {
        (a * self.n_leaves + b) * self.max_up + k
    }

    /// The current train size from leaf `s` toward leaf `d`.
    pub fn granularity(&self, s: usize, d: usize) -> u32 {
        if self.fixed > 0 {
            self.fixed
        } else {
            self.gran[s * self.n_leaves + d]
        }
    }

    /// The train size and congested-path count of every pair with
    /// measurements, and every measured path delay (time set by the caller).
    pub fn sample(&self, ctx: &Ctx, out: &mut Vec<crate::SchemeSample>) {
        for s in 0..self.n_leaves {
            for d in (0..self.n_leaves).filter(|&d| d != s) {
                let i = s * self.n_leaves + d;
                if self.measured[i] {
                    out.push((SimTime::ZERO, "granularity_pkts", s as u32, d as u32, self.granularity(s, d) as f64));
                    out.push((SimTime::ZERO, "congested_paths", s as u32, d as u32, self.congested[i] as f64));
                }
                for k in 0..self.uplinks[s].len() {
                    // the delays AG itself uses: refreshed within owd_max_age
                    let fresh = self.owd[self.idx(s, d, k)].filter(|o| ctx.now.saturating_sub(o.at) <= self.max_age);
                    if let Some(o) = fresh {
                        out.push((SimTime::ZERO, "owd_us", s as u32, (d * 64 + k) as u32, o.value.as_us_f64()));
                        out.push((SimTime::ZERO, "probe_bytes", s as u32, (d * 64 + k) as u32, o.bytes as f64));
                        if let Some(t) = true_owd(ctx, self.uplinks[s][k], ctx.topo.racks[d], Bytes(o.bytes as u64)) {
                            out.push((SimTime::ZERO, "true_owd_us", s as u32, (d * 64 + k) as u32, t.as_us_f64()));
                        }
                    }
                }
            }
        }
    }

    /// The last measured one-way delay from `s` to `d` via uplink `k`.
    pub fn owd(&self, s: usize, d: usize, k: usize) -> Option<SimTime> {
        self.owd[self.idx(s, d, k)].map(|o| o.value)
    }

    /// The sample interval leaf `s` uses now.
    pub fn interval(&self, s: usize) -> SimTime {
        self.t[s]
    }

    /// The mean over leaves of their sample interval (us).
    pub fn mean_interval_us(&self) -> f64 {
        self.t.iter().map(|t| t.as_us_f64()).sum::<f64>() / self.t.len().max(1) as f64
    }

    /// Adaptive T: leaf `s`'s interval from the delays returned to it.
    fn learn(&mut self, s: usize) {
        let n = self.n_leaves * self.max_up;
        let mine = &self.samples[s * n..(s + 1) * n];
        if let Some(t) = adaptive_interval(mine.iter().map(|v| v.as_slice()), self.margin) {
            self.t[s] = t;
            self.adapted[s] = true;
        }
        self.learned[s] = true;
        self.samples[s * n..(s + 1) * n].iter_mut().for_each(|v| *v = vec![]);
    }

    /// Recomputes M_b and gran* for leaf `s`'s pairs from the delays now known.
    fn update(&mut self, ctx: &Ctx, s: usize) {
        let now = ctx.now;
        {
            let m = self.uplinks[s].len();
            // C: the slowest uplink of the leaf (AG's fabrics are uniform)
            let c = self.uplinks[s].iter().map(|p| ctx.ports[p.idx()].rate.0).min().unwrap_or(0) as f64;
            for d in 0..self.n_leaves {
                if d == s || m == 0 {
                    continue;
                }
                let fresh: Vec<(usize, SimTime)> =
                    (0..m).filter_map(|k| self.owd[self.idx(s, d, k)].filter(|o| now - o.at <= self.max_age).map(|o| (k, o.value))).collect();
                if fresh.is_empty() {
                    continue;
                }
                let mean = fresh.iter().map(|x| x.1.as_secs_f64()).sum::<f64>() / fresh.len() as f64;
                let margin = self.margin.as_secs_f64();
                let floor = self.floor[s * self.n_leaves + d].as_secs_f64();
                let (mut bad, mut good) = (vec![], vec![]);
                for &(_, v) in &fresh {
                    let q = v.as_secs_f64() - floor;
                    if v.as_secs_f64() > mean + margin {
                        bad.push(q)
                    } else {
                        good.push(q)
                    }
                }
                let avg = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
                let base = self.base_rtt.as_secs_f64();
                let (qg, qb) = (avg(&good), avg(&bad));
                let input = Input {
                    paths: m as u32,
                    congested: bad.len() as u32,
                    rtt_g_s: base + qg.or(qb).unwrap_or(0.0),
                    rtt_b_s: base + qb.or(qg).unwrap_or(0.0),
                    window_pkts: self.window,
                    pkt_bytes: self.pkt_bytes,
                    path_bps: c,
                };
                let g = model::optimal_granularity(&input, self.search);
                self.gran[s * self.n_leaves + d] = g;
                self.congested[s * self.n_leaves + d] = bad.len() as u32;
                self.measured[s * self.n_leaves + d] = true;
                self.gran_sum += g as u64;
                self.congested_sum += bad.len() as u64;
                self.updates += 1;
            }
        }
    }
}

impl LoadBalancer for Ag {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn start(&mut self, ctx: &mut Ctx) {
        // one timer per leaf (token = its rack index): T can differ by leaf
        for s in 0..self.n_leaves {
            ctx.schedule(SimTime::ZERO, s as u64);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        let s = token as usize;
        if self.learn_until > SimTime::ZERO && !self.learned[s] && ctx.now >= self.learn_until {
            self.learn(s);
        }
        self.update(ctx, s);
        let n = self.n_leaves * self.max_up;
        self.probe_due[s * n..(s + 1) * n].iter_mut().for_each(|x| *x = true);
        ctx.schedule(ctx.now + self.t[s], token);
    }

    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, in_port: PortId, pkt: PktId, c: &[PortId]) -> Forward {
        let node = ctx.topo.node(sw);
        if node.tier != Tier::Leaf {
            return Forward::Port(ctx.ecmp(sw, pkt, c));
        }
        let me = node.index as usize;
        let p = *ctx.pkt(pkt);
        let (src_leaf, dst_leaf) =
            (ctx.topo.host_rack[ctx.topo.host_index(p.src) as usize] as usize, ctx.topo.host_rack[ctx.topo.host_index(p.dst) as usize] as usize);
        let now_ns = (ctx.now.0 / 1000) as u32; // the header's clock: ns, wrapping
        if dst_leaf == me && src_leaf != me {
            // destination leaf: take the AG fields off before the host sees them
            if let LbHeader::Ag { probe, feedback, ns, leaf, bytes } = p.lb {
                let k = self.up_index[in_port.idx()];
                if k != u32::MAX {
                    if probe {
                        // a probe from `leaf` arrived on my uplink k: its delay goes back out of k
                        let owd = SimTime(now_ns.wrapping_sub(ns) as u64 * 1000);
                        let i = self.idx(me, leaf as usize, k as usize);
                        self.pending[i] = Some((owd, p.size.min(u16::MAX as u32) as u16));
                    }
                    if feedback {
                        // `leaf` measured my path toward it via the uplink this came in on
                        let i = self.idx(me, leaf as usize, k as usize);
                        let owd = SimTime(ns as u64 * 1000);
                        self.owd[i] = Some(Owd { value: owd, at: ctx.now, bytes });
                        let f = &mut self.floor[me * self.n_leaves + leaf as usize];
                        *f = (*f).min(owd);
                        self.feedbacks_received += 1;
                        if ctx.now < self.learn_until {
                            self.samples[i].push((ctx.now, owd));
                        }
                    }
                }
                ctx.pkt_mut(pkt).lb = LbHeader::None;
            }
            return Forward::Port(ctx.ecmp(sw, pkt, c));
        }
        if src_leaf != me || dst_leaf == me || c.len() < 2 {
            return Forward::Port(ctx.ecmp(sw, pkt, c));
        }
        // source leaf: the packet train
        let gran = self.granularity(me, dst_leaf);
        let size = self.table_size;
        let table = &mut self.trains[me];
        if table.is_empty() {
            *table = vec![Train::default(); size];
        }
        let e = &mut table[(p.hash % size as u64) as usize];
        let port = if e.valid && e.len < gran && c.contains(&PortId(e.port)) {
            e.len += 1;
            PortId(e.port)
        } else {
            if e.valid {
                if e.len >= gran {
                    self.full_trains += 1;
                } else {
                    self.short_trains += 1;
                }
            }
            let port = c[ctx.rng.below(c.len() as u64) as usize];
            *e = Train { port: port.0, len: 1, valid: true };
            self.trains_started += 1;
            self.trains_by_port[port.idx()] += 1;
            port
        };
        // one role per packet: feedback owed toward `dst_leaf` on this
        // uplink first (any TCP packet: "few data and ACK packets carry
        // the delay information", §V), else a due probe on a data packet
        // ("only a few data packets are selected as the probe packets", §III)
        let k = self.up_index[port.idx()] as usize;
        if k != u32::MAX as usize && p.tcp().is_some() {
            let fi = self.idx(me, dst_leaf, k);
            if let Some((owd, bytes)) = self.pending[fi].take() {
                let ns = (owd.0 / 1000).min(u32::MAX as u64) as u32;
                ctx.pkt_mut(pkt).lb = LbHeader::Ag { probe: false, feedback: true, ns, leaf: me as u16, bytes };
                self.feedbacks_sent += 1;
            } else if p.is_data() && (std::mem::take(&mut self.probe_due[fi]) || ctx.now < self.learn_until) {
                ctx.pkt_mut(pkt).lb = LbHeader::Ag { probe: true, feedback: false, ns: now_ns, leaf: me as u16, bytes: 0 };
                self.probes += 1;
            }
        }
        Forward::Port(port)
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("probes", self.probes as f64),
            ("feedbacks_sent", self.feedbacks_sent as f64),
            ("feedbacks_received", self.feedbacks_received as f64),
            ("trains", self.trains_started as f64),
            ("trains_ended_full", self.full_trains as f64),
            ("trains_ended_short", self.short_trains as f64),
            ("mean_granularity_pkts", if self.updates > 0 { self.gran_sum as f64 / self.updates as f64 } else { 1.0 }),
            ("mean_congested_paths", if self.updates > 0 { self.congested_sum as f64 / self.updates as f64 } else { 0.0 }),
            ("mean_sample_interval_us", self.mean_interval_us()),
        ]
    }

    /// Per leaf: the granularity toward each other leaf, the last one-way
    /// delay per path, trains per uplink and the sample interval.
    fn report(&self, topo: &Topology) -> Vec<ReportTable> {
        let name = |r: usize| topo.nodes[topo.racks[r].idx()].name.clone();
        let port = |p: PortId| topo.ports[p.idx()].name.clone();
        let [mut gran, mut owd, mut trains, mut interval] = ["granularity_pkts", "owd_us", "trains_by_uplink", "sample_interval_us"].map(ReportTable::new);
        for s in 0..self.n_leaves {
            for d in (0..self.n_leaves).filter(|&d| d != s) {
                gran.push([name(s), name(d)], ReportValue::Real(self.granularity(s, d) as f64));
                for (k, &up) in self.uplinks[s].iter().enumerate() {
                    if let Some(o) = self.owd(s, d, k) {
                        owd.push([format!("{}->{}", name(s), name(d)), port(up)], ReportValue::Real(o.as_us_f64()));
                    }
                }
            }
            for &up in &self.uplinks[s] {
                trains.push([name(s), port(up)], ReportValue::Real(self.trains_by_port[up.idx()] as f64));
            }
            interval.push([name(s), if self.adapted[s] { "learned" } else { "fixed" }.into()], ReportValue::Real(self.t[s].as_us_f64()));
        }
        // a table without rows is left out
        [gran, owd, trains, interval].into_iter().filter(|t| !t.rows.is_empty()).collect()
    }
}

/// Simulator truth for AG Fig. 12 (reported beside the measurement, never
/// used by the scheme): the one-way delay from leaf uplink `up` to leaf node
/// `dst_leaf` that a packet of `size` (the size of the packet that measured
/// the delay it is compared with) entering `up` now would see — per hop,
/// the time until the port is free, its own serialisation and the
/// propagation delay, with the spine's port read now (not when the packet
/// would reach it; the least busy of parallel links toward `dst_leaf`).
/// None when the spine has no link to `dst_leaf`.
pub fn true_owd(ctx: &Ctx, up: PortId, dst_leaf: NodeId, size: Bytes) -> Option<SimTime> {
    // the wait is until the port is free (the packet in service counts
    // only its remaining part), then its own serialisation and the wire
    let hop = |p: PortId| {
        let q = &ctx.ports[p.idx()];
        (q.busy_until().max(ctx.now) - ctx.now) + q.tx_time(size) + q.delay
    };
    let spine = ctx.topo.ports[ctx.topo.ports[up.idx()].peer.idx()].node;
    let down = ctx.topo.nodes[spine.idx()]
        .ports
        .iter()
        .copied()
        .filter(|&p| ctx.topo.ports[ctx.topo.ports[p.idx()].peer.idx()].node == dst_leaf)
        .min_by_key(|&p| ctx.ports[p.idx()].busy_until())?;
    Some(hop(up) + hop(down))
}

#[cfg(test)]
mod tests {
    use super::model::*;

    fn input(m: u32, mb: u32, rtt_b_us: f64) -> Input {
        Input { paths: m, congested: mb, rtt_g_s: 250e-6, rtt_b_s: rtt_b_us * 1e-6, window_pkts: 44, pkt_bytes: 1500, path_bps: 1e9 }
    }

    #[test]
    fn no_reordering_with_one_train_or_no_congested_or_all_congested_paths() {
        assert_eq!(reorder_probability(1, 0.3), 0.0);
        assert_eq!(reorder_probability(44, 0.0), 0.0);
        assert!(reorder_probability(44, 1.0).abs() < 1e-12);
        // two trains: reordered iff the first is congested and the second not
        assert!((reorder_probability(2, 0.25) - 0.25 * 0.75).abs() < 1e-12);
        for mb in [0, 45] {
            assert_eq!(optimal_granularity(&input(45, mb, 500.0), Search::Exhaustive), 1, "M_b = {mb}");
        }
    }

    #[test]
    fn optimal_trains_match_the_spec_table_for_45_paths() {
        // docs/schemes/ag.md §1.4, M = 45, RTT_g = 250 us, RTT_b = 500 us
        for (mb, g) in [(1, 6), (2, 8), (5, 15), (10, 22), (22, 22), (40, 11)] {
            assert_eq!(optimal_granularity(&input(45, mb, 500.0), Search::Exhaustive), g, "M_b = {mb}");
        }
        for (mb, g) in [(1, 9), (2, 11), (5, 22), (22, 44), (40, 15)] {
            assert_eq!(optimal_granularity(&input(45, mb, 1000.0), Search::Exhaustive), g, "1 ms, M_b = {mb}");
        }
    }

    #[test]
    fn the_train_grows_with_congested_paths_up_to_half() {
        for rb in [500.0, 1000.0] {
            let mut last = 0;
            for mb in 0..=22 {
                let g = optimal_granularity(&input(45, mb, rb), Search::Exhaustive);
                assert!(g >= last, "RTT_b {rb}: M_b {mb} gives {g} < {last}");
                last = g;
            }
        }
    }

    #[test]
    fn bisection_misses_the_argmax_where_r_is_not_unimodal() {
        // M_b = 20 of 45, RTT_b = 300 us: r(1) = 846, r(6) = 751, r(15) = 851 Mb/s
        let m = input(45, 20, 300.0);
        assert!((rate(1, &m) / 1e6 - 846.2).abs() < 0.1);
        assert!((rate(15, &m) / 1e6 - 850.7).abs() < 0.1);
        assert_eq!(optimal_granularity(&m, Search::Exhaustive), 15);
        assert_eq!(optimal_granularity(&m, Search::Bisect), 9);
        // where r is unimodal they agree
        assert_eq!(optimal_granularity(&input(45, 2, 500.0), Search::Bisect), 8);
    }

    /// §VI-D by hand: a path alternating between 100 us and 150 us every
    /// 300 us (samples every 50 us) changes state every 300 us.
    #[test]
    fn state_period_is_the_mean_time_between_changes() {
        use super::{adaptive_interval, mean_state_period, SimTime, ADAPTIVE_T_MAX, ADAPTIVE_T_MIN};
        let us = |x: u64| SimTime(x * 1_000_000);
        let square = |half: u64, n: u64| -> Vec<(SimTime, SimTime)> {
            (0..n).map(|i| (us(50 * i), us(if (50 * i / half).is_multiple_of(2) { 100 } else { 150 }))).collect()
        };
        let a = square(300, 200);
        assert_eq!(mean_state_period(&a, SimTime::ZERO), Some(us(300)));
        // a constant path never changes; one change is not a period
        let flat: Vec<_> = (0..50).map(|i| (us(10 * i), us(84))).collect();
        assert_eq!(mean_state_period(&flat, SimTime::ZERO), None);
        assert_eq!(mean_state_period(&square(1000, 30), SimTime::ZERO), None, "a single step");
        // the margin: 30 us above the mean (about 125) is not exceeded by 150 ...
        assert_eq!(mean_state_period(&a, us(30)), None);
        // ... and 1-us jitter around 84 us is ignored with a 2-us margin
        let jitter: Vec<_> = (0..50).map(|i| (us(10 * i), us(84 + i % 2))).collect();
        assert_eq!(mean_state_period(&jitter, SimTime::ZERO), Some(us(10)));
        assert_eq!(mean_state_period(&jitter, us(2)), None);
        // the leaf takes half the shortest period over its paths, clamped
        let b = square(900, 200);
        assert_eq!(adaptive_interval([a.as_slice(), b.as_slice(), flat.as_slice()], SimTime::ZERO), Some(us(150)));
        assert_eq!(adaptive_interval([flat.as_slice()], SimTime::ZERO), None);
        assert_eq!(adaptive_interval([jitter.as_slice()], SimTime::ZERO), Some(ADAPTIVE_T_MIN), "5 us clamps to 10");
        let slow: Vec<_> = (0..10).map(|i| (us(40_000 * i), us(if i % 2 == 0 { 100 } else { 200 }))).collect();
        assert_eq!(adaptive_interval([slow.as_slice()], SimTime::ZERO), Some(ADAPTIVE_T_MAX), "half of 40 ms periods clamps to 10 ms");
    }
}
