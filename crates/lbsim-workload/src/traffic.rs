//! Open-loop traffic: Poisson flow arrivals with sizes from a CDF and
//! (source, destination) pairs from a pattern, and flow-list files.
//!
//! The arrival rate follows from the offered load: `rate = load × capacity
//! / (8 × mean flow size)` flows per second, where `capacity` is a named
//! capacity of the fabric (see `lbsim-sim`'s scenario docs) and the mean is
//! that of the sampler actually used.

use crate::sizes::FlowSizes;
use lbsim_engine::{Rng, SimTime};
use std::fmt::Write as _;

/// One flow of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start: SimTime,
    /// Index of the flow's size class ([`crate::FlowSizes`]); 0 when the
    /// workload has one.
    pub class: u8,
}

/// Where hosts sit: rack and pod of each host index.
#[derive(Clone, Debug)]
pub struct HostLayout {
    pub rack: Vec<u32>,
    pub pod: Vec<u32>,
}

impl HostLayout {
    pub fn hosts(&self) -> usize {
        self.rack.len()
    }
}

/// Which (source, destination) pairs flows use.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// Source uniform over hosts of `src_racks` (all racks if empty),
    /// destination uniform over hosts of `dst_racks` (all if empty) in a
    /// different rack than the source.
    InterRack { src_racks: Vec<u32>, dst_racks: Vec<u32> },
    /// Source and destination uniform over all hosts, distinct.
    AllToAll,
    /// Source uniform; destination `(src + stride) mod H`.
    Stride { stride: u32 },
    /// A random permutation without fixed points drawn once per run;
    /// source uniform, destination its image.
    Bijection,
    /// Source uniform; destination uniform over hosts in other pods. With
    /// `pods` non-empty, sources and destinations are the hosts of those
    /// pods only (Expeditus Fig. 20: traffic between two pods).
    RandomInterPod { pods: Vec<u32> },
    /// A random permutation drawn once per run in which every host's image
    /// sits in another pod: each host sends to, and receives from, exactly
    /// one host of another pod (Expeditus §6.2 "Bijection"); `pods` as above.
    BijectionInterPod { pods: Vec<u32> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct PatternError(pub String);

/// Draws pairs for a pattern (holds the per-run state, e.g. the bijection).
pub struct PairSampler {
    pattern: Pattern,
    srcs: Vec<u32>,
    dsts: Vec<u32>,
    perm: Vec<u32>,
    layout: HostLayout,
}

impl PairSampler {
    pub fn new(pattern: Pattern, layout: &HostLayout, rng: &mut Rng) -> Result<PairSampler, PatternError> {
        let h = layout.hosts() as u32;
        if h < 2 {
            return Err(PatternError("a traffic pattern needs at least 2 hosts".into()));
        }
        let all: Vec<u32> = (0..h).collect();
        let in_racks = |racks: &[u32]| -> Vec<u32> {
            if racks.is_empty() {
                all.clone()
            } else {
                all.iter().copied().filter(|&x| racks.contains(&layout.rack[x as usize])).collect()
            }
        };
        let in_pods = |pods: &[u32]| -> Vec<u32> { all.iter().copied().filter(|&x| pods.is_empty() || pods.contains(&layout.pod[x as usize])).collect() };
        let (mut srcs, dsts) = match &pattern {
            Pattern::InterRack { src_racks, dst_racks } => (in_racks(src_racks), in_racks(dst_racks)),
            Pattern::RandomInterPod { pods } | Pattern::BijectionInterPod { pods } => (in_pods(pods), in_pods(pods)),
            _ => (all.clone(), all.clone()),
        };
        let mut perm = vec![];
        match &pattern {
            Pattern::InterRack { .. } => {
                // keep only sources that have some destination in another rack
                srcs.retain(|&s| dsts.iter().any(|&d| layout.rack[d as usize] != layout.rack[s as usize]));
                if srcs.is_empty() {
                    return Err(PatternError("inter_rack: no source has a destination in another rack (check src_racks/dst_racks)".into()));
                }
            }
            Pattern::Stride { stride } => {
                if stride % h == 0 {
                    return Err(PatternError(format!("stride {stride} maps every host to itself with {h} hosts")));
                }
            }
            Pattern::Bijection => {
                // Sattolo's algorithm: a uniformly random cyclic permutation (no fixed points)
                perm = all.clone();
                for i in (1..h as usize).rev() {
                    let j = rng.below(i as u64) as usize;
                    perm.swap(i, j);
                }
            }
            Pattern::RandomInterPod { .. } | Pattern::BijectionInterPod { .. } => {
                let p0 = layout.pod[srcs.first().copied().unwrap_or(0) as usize];
                if srcs.iter().all(|&h| layout.pod[h as usize] == p0) {
                    return Err(PatternError("an inter-pod pattern needs hosts in at least two pods (check workload.pods)".into()));
                }
                if matches!(pattern, Pattern::BijectionInterPod { .. }) {
                    perm = inter_pod_permutation(&srcs, &layout.pod, rng)?;
                }
            }
            Pattern::AllToAll => {}
        }
        Ok(PairSampler { pattern, srcs, dsts, perm, layout: layout.clone() })
    }

    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }
    /// Hosts that send under this pattern.
    pub fn sources(&self) -> &[u32] {
        &self.srcs
    }

    pub fn draw(&self, rng: &mut Rng) -> (u32, u32) {
        let src = self.srcs[rng.below(self.srcs.len() as u64) as usize];
        (src, self.destination(src, rng))
    }

    /// A destination for source `src` (one of [`PairSampler::sources`]).
    pub fn destination(&self, src: u32, rng: &mut Rng) -> u32 {
        let h = self.layout.hosts() as u32;
        match &self.pattern {
            Pattern::InterRack { .. } => loop {
                let d = self.dsts[rng.below(self.dsts.len() as u64) as usize];
                if self.layout.rack[d as usize] != self.layout.rack[src as usize] {
                    break d;
                }
            },
            Pattern::AllToAll => loop {
                let d = rng.below(h as u64) as u32;
                if d != src {
                    break d;
                }
            },
            Pattern::Stride { stride } => (src + stride) % h,
            Pattern::Bijection | Pattern::BijectionInterPod { .. } => self.perm[src as usize],
            Pattern::RandomInterPod { .. } => loop {
                let d = self.dsts[rng.below(self.dsts.len() as u64) as usize];
                if self.layout.pod[d as usize] != self.layout.pod[src as usize] {
                    break d;
                }
            },
        }
    }
}

/// A permutation of `hosts` (indexed by host number) mapping every host to
/// one in another pod: a uniform shuffle, then repairs that swap the images
/// of two hosts until no host maps into its own pod.
fn inter_pod_permutation(hosts: &[u32], pod: &[u32], rng: &mut Rng) -> Result<Vec<u32>, PatternError> {
    let n = hosts.len();
    let mut per_pod: std::collections::BTreeMap<u32, usize> = Default::default();
    for &h in hosts {
        *per_pod.entry(pod[h as usize]).or_default() += 1;
    }
    if per_pod.values().any(|&c| 2 * c > n) {
        return Err(PatternError("bijection_inter_pod: one pod holds more than half the hosts, so some must send inside it".into()));
    }
    let mut img: Vec<u32> = rng.permutation(n).into_iter().map(|i| hosts[i]).collect();
    for _round in 0..1000 {
        let mut clean = true;
        for i in 0..n {
            if pod[img[i] as usize] != pod[hosts[i] as usize] {
                continue;
            }
            clean = false;
            // swap with a j such that both end up in other pods
            for _ in 0..64 {
                let j = rng.below(n as u64) as usize;
                if pod[img[j] as usize] != pod[hosts[i] as usize] && pod[img[i] as usize] != pod[hosts[j] as usize] {
                    img.swap(i, j);
                    break;
                }
            }
        }
        if clean {
            let mut perm: Vec<u32> = (0..pod.len() as u32).collect();
            for (i, &h) in hosts.iter().enumerate() {
                perm[h as usize] = img[i];
            }
            return Ok(perm);
        }
    }
    Err(PatternError("bijection_inter_pod: no inter-pod permutation found".into()))
}

/// One flow per source of `pairs` (Expeditus §6.2's stress tests): sizes
/// from `cdf`, sources started in a random order with exponential gaps of
/// mean `mean_gap` between consecutive starts (0: all at `t0`).
pub fn per_sender_flows(t0: SimTime, mean_gap: SimTime, sizes: &FlowSizes, min_bytes: u64, pairs: &PairSampler, rng: &mut Rng) -> Vec<FlowSpec> {
    let srcs = pairs.sources();
    let order = rng.permutation(srcs.len());
    let mut t = t0;
    let mut v = Vec::with_capacity(srcs.len());
    for (k, &i) in order.iter().enumerate() {
        if k > 0 && mean_gap > SimTime::ZERO {
            t += SimTime::from_secs_f64(rng.exp(mean_gap.as_secs_f64()));
        }
        let src = srcs[i];
        let dst = pairs.destination(src, rng);
        let (size, class) = sizes.sample(rng, min_bytes);
        v.push(FlowSpec { src, dst, size, start: t, class });
    }
    v
}

/// `n` flows with Poisson arrivals at `rate` flows/s starting at `t0`.
pub fn poisson_flows(n: usize, rate_per_s: f64, t0: SimTime, sizes: &FlowSizes, min_bytes: u64, pairs: &PairSampler, rng: &mut Rng) -> Vec<FlowSpec> {
    let mut t = t0.as_secs_f64();
    let mean_gap = 1.0 / rate_per_s;
    (0..n)
        .map(|_| {
            t += rng.exp(mean_gap);
            let (src, dst) = pairs.draw(rng);
            let (size, class) = sizes.sample(rng, min_bytes);
            FlowSpec { src, dst, size, start: SimTime::from_secs_f64(t), class }
        })
        .collect()
}

/// Writes a flow list: header `src,dst,size_bytes,start_us`, the start in
/// microseconds with 6 decimals (exactly the picosecond start).
pub fn write_flow_list(flows: &[FlowSpec]) -> String {
    let mut s = String::with_capacity(flows.len() * 32 + 32);
    s.push_str("src,dst,size_bytes,start_us\n");
    for f in flows {
        let ps = f.start.ps();
        let _ = writeln!(s, "{},{},{},{}.{:06}", f.src, f.dst, f.size, ps / 1_000_000, ps % 1_000_000);
    }
    s
}

/// Reads a flow list: the CSV that [`write_flow_list`] writes (header
/// `src,dst,size_bytes,start_us`, extra columns ignored), or an htsim
/// connection matrix (`.cm`: `Nodes N`, `Connections M`, then lines
/// `src->dst id I start T size S` with T in picoseconds). Hosts must be
/// below `hosts`. Flows are returned sorted by start time (stable).
pub fn read_flow_list(text: &str, hosts: u32) -> Result<Vec<FlowSpec>, String> {
    if text.trim_start().starts_with("Nodes") {
        return read_connection_matrix(text, hosts);
    }
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("flow list is empty")?;
    let cols: Vec<&str> = header.split(',').map(|c| c.trim()).collect();
    let idx =
        |name: &str| cols.iter().position(|c| *c == name).ok_or_else(|| format!("flow list header lacks column {name:?} (need src,dst,size_bytes,start_us)"));
    let (is, id, iz, it) = (idx("src")?, idx("dst")?, idx("size_bytes")?, idx("start_us")?);
    let mut v = vec![];
    for (ln, l) in lines {
        let f: Vec<&str> = l.split(',').map(|c| c.trim()).collect();
        let get = |i: usize, what: &str| f.get(i).copied().ok_or_else(|| format!("flow list line {}: missing {what}", ln + 1));
        let src: u32 = get(is, "src")?.parse().map_err(|e| format!("flow list line {}: src: {e}", ln + 1))?;
        let dst: u32 = get(id, "dst")?.parse().map_err(|e| format!("flow list line {}: dst: {e}", ln + 1))?;
        let size: u64 = get(iz, "size_bytes")?.parse().map_err(|e| format!("flow list line {}: size_bytes: {e}", ln + 1))?;
        let us: f64 = get(it, "start_us")?.parse().map_err(|e| format!("flow list line {}: start_us: {e}", ln + 1))?;
        if !(us.is_finite() && us >= 0.0) {
            return Err(format!("flow list line {}: start_us must be >= 0", ln + 1));
        }
        v.push(checked(ln, hosts, src, dst, size, SimTime::from_us_f64(us))?);
    }
    v.sort_by_key(|f| f.start);
    Ok(v)
}

/// One flow after the checks every format shares.
fn checked(ln: usize, hosts: u32, src: u32, dst: u32, size: u64, start: SimTime) -> Result<FlowSpec, String> {
    if src >= hosts || dst >= hosts {
        return Err(format!("flow list line {}: host out of range (topology has {hosts} hosts, numbered 0..{})", ln + 1, hosts - 1));
    }
    if src == dst {
        return Err(format!("flow list line {}: src equals dst ({src})", ln + 1));
    }
    if size == 0 {
        return Err(format!("flow list line {}: size_bytes must be > 0", ln + 1));
    }
    Ok(FlowSpec { src, dst, size, start, class: 0 })
}

/// An htsim connection matrix (see [`read_flow_list`]).
fn read_connection_matrix(text: &str, hosts: u32) -> Result<Vec<FlowSpec>, String> {
    let mut v = vec![];
    for (ln, l) in text.lines().enumerate() {
        let t: Vec<&str> = l.split_whitespace().collect();
        match t.first() {
            None | Some(&"Nodes") | Some(&"Connections") => continue,
            _ => {}
        }
        let bad = |what: &str| format!("connection matrix line {}: {what} (expected \"src->dst id I start T size S\")", ln + 1);
        let (src, dst) = t[0].split_once("->").ok_or_else(|| bad("no src->dst"))?;
        let field = |name: &str| -> Result<u64, String> {
            let i = t.iter().position(|x| *x == name).ok_or_else(|| bad(&format!("no {name}")))?;
            t.get(i + 1).ok_or_else(|| bad(&format!("{name} has no value")))?.parse::<u64>().map_err(|e| bad(&format!("{name}: {e}")))
        };
        let src: u32 = src.parse().map_err(|e| bad(&format!("src: {e}")))?;
        let dst: u32 = dst.parse().map_err(|e| bad(&format!("dst: {e}")))?;
        v.push(checked(ln, hosts, src, dst, field("size")?, SimTime(field("start")?))?);
    }
    if v.is_empty() {
        return Err("connection matrix has no connections".into());
    }
    v.sort_by_key(|f| f.start);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cdf, SizeDist};

    fn layout() -> HostLayout {
        HostLayout { rack: (0..32).map(|h| h / 16).collect(), pod: vec![0; 32] }
    }

    #[test]
    fn a_connection_matrix_gives_the_flows_of_its_csv_form() {
        let cm =
            "Nodes 128\nConnections 3\n16->65 id 1 start 3086476 size 7861\n120->97 id 2 start 33699340 size 1887234\n7->99 id 3 start 35807621 size 57562\n";
        let csv = "src,dst,size_bytes,start_us,cm_id,cm_size\n16,65,7861,3.086476,1,7861\n120,97,1887234,33.699340,2,1887234\n7,99,57562,35.807621,3,57562\n";
        assert_eq!(read_flow_list(cm, 128).unwrap(), read_flow_list(csv, 128).unwrap());
        let e = read_flow_list("Nodes 4\n0->9 id 1 start 0 size 10\n", 4).unwrap_err();
        assert!(e.contains("line 2") && e.contains("out of range"), "{e}");
        let e = read_flow_list("Nodes 4\n0->1 id 1 start x size 10\n", 4).unwrap_err();
        assert!(e.contains("line 2: start"), "{e}");
        // the first 40 flows of the scale benchmark's web-search list, in both
        // forms (tests/data, shipped with the crate): same flows, same order
        let cm = include_str!("../tests/data/ws_excerpt.cm");
        let csv = include_str!("../tests/data/ws_excerpt.csv");
        let (a, b) = (read_flow_list(cm, 128).unwrap(), read_flow_list(csv, 128).unwrap());
        assert_eq!(a.len(), 40);
        assert_eq!(a, b);
        assert_eq!((a[39].src, a[39].dst, a[39].size), (101, 82, 678_591));
        assert_eq!(a[39].start, SimTime(968_274_190));
    }

    #[test]
    fn inter_rack_pairs_cross_racks_and_respect_filters() {
        let mut rng = Rng::stream(1, "t");
        let ps = PairSampler::new(Pattern::InterRack { src_racks: vec![0], dst_racks: vec![1] }, &layout(), &mut rng).unwrap();
        for _ in 0..1000 {
            let (s, d) = ps.draw(&mut rng);
            assert!(s < 16 && d >= 16);
        }
        let ps = PairSampler::new(Pattern::InterRack { src_racks: vec![], dst_racks: vec![] }, &layout(), &mut rng).unwrap();
        let mut from_rack1 = 0;
        for _ in 0..1000 {
            let (s, d) = ps.draw(&mut rng);
            assert_ne!(s / 16, d / 16);
            from_rack1 += (s >= 16) as u32;
        }
        assert!(from_rack1 > 400 && from_rack1 < 600);
    }

    #[test]
    fn bijection_is_a_permutation_without_fixed_points() {
        let mut rng = Rng::stream(3, "t");
        let ps = PairSampler::new(Pattern::Bijection, &layout(), &mut rng).unwrap();
        let mut seen = [false; 32];
        for s in 0..32 {
            let d = ps.perm[s];
            assert_ne!(d as usize, s);
            assert!(!seen[d as usize]);
            seen[d as usize] = true;
        }
    }

    #[test]
    fn inter_pod_bijection_and_per_sender_starts() {
        // 3 pods of 4 hosts; traffic restricted to pods 0 and 2
        let l = HostLayout { rack: (0..12).map(|h| h / 2).collect(), pod: (0..12).map(|h| h / 4).collect() };
        for seed in 0..20 {
            let mut rng = Rng::stream(seed, "t");
            let ps = PairSampler::new(Pattern::BijectionInterPod { pods: vec![] }, &l, &mut rng).unwrap();
            let mut seen = [0; 12];
            for s in 0..12u32 {
                let d = ps.destination(s, &mut rng);
                assert_ne!(l.pod[d as usize], l.pod[s as usize]);
                seen[d as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1), "each host receives from exactly one sender");
            let ps = PairSampler::new(Pattern::BijectionInterPod { pods: vec![0, 2] }, &l, &mut rng).unwrap();
            assert_eq!(ps.sources(), &[0, 1, 2, 3, 8, 9, 10, 11]);
            for &s in ps.sources() {
                let d = ps.destination(s, &mut rng);
                assert!(l.pod[d as usize] == 2 - l.pod[s as usize]);
            }
        }
        let mut rng = Rng::stream(1, "t");
        assert!(PairSampler::new(Pattern::RandomInterPod { pods: vec![1] }, &l, &mut rng).is_err());
        // per sender: one flow each; gap 0 = all at t0; gap 30 us: mean spacing 30 us
        let cdf = FlowSizes::single(SizeDist::Cdf(Cdf::fixed(50_000_000)));
        let ps = PairSampler::new(Pattern::Stride { stride: 4 }, &l, &mut rng).unwrap();
        let f = per_sender_flows(SimTime::ZERO, SimTime::ZERO, &cdf, 1448, &ps, &mut rng);
        assert_eq!(f.len(), 12);
        assert!(f.iter().all(|x| x.start == SimTime::ZERO && x.dst == (x.src + 4) % 12 && x.size == 50_000_000));
        let mut srcs: Vec<u32> = f.iter().map(|x| x.src).collect();
        srcs.sort();
        assert_eq!(srcs, (0..12).collect::<Vec<_>>());
        let big = HostLayout { rack: (0..4000).map(|h| h / 8).collect(), pod: (0..4000).map(|h| h / 400).collect() };
        let ps = PairSampler::new(Pattern::RandomInterPod { pods: vec![] }, &big, &mut rng).unwrap();
        let f = per_sender_flows(SimTime::ZERO, SimTime::from_us(30), &cdf, 1448, &ps, &mut rng);
        let mean = f.last().unwrap().start.as_us_f64() / 3999.0;
        assert!((mean - 30.0).abs() < 1.5, "{mean}");
    }

    #[test]
    fn poisson_rate_and_flow_list_round_trip() {
        let mut rng = Rng::stream(9, "t");
        let cdf = FlowSizes::single(SizeDist::Cdf(Cdf::builtin("websearch", None).unwrap()));
        let ps = PairSampler::new(Pattern::AllToAll, &layout(), &mut rng).unwrap();
        let flows = poisson_flows(20_000, 1e5, SimTime::ZERO, &cdf, 1448, &ps, &mut rng);
        let span = flows.last().unwrap().start.as_secs_f64();
        let rate = flows.len() as f64 / span;
        assert!((rate - 1e5).abs() / 1e5 < 0.03, "{rate}");
        let text = write_flow_list(&flows);
        let back = read_flow_list(&text, 32).unwrap();
        assert_eq!(back, flows, "exact picosecond round trip");
    }

    #[test]
    fn flow_list_errors_name_the_line_and_field() {
        let e = read_flow_list("src,dst,size_bytes,start_us\n0,40,100,1.0\n", 32).unwrap_err();
        assert!(e.contains("line 2") && e.contains("out of range"), "{e}");
        let e = read_flow_list("src,dst,size\n", 32).unwrap_err();
        assert!(e.contains("start_us") || e.contains("size_bytes"), "{e}");
    }
}
