//! How much of a run two or four cores could share (issue 19's "second
//! core"), and which of its ties in time a cut could not settle alone
//! ([`TieStudy`]; bench/README.md, twelfth pass): a measurement for a design study, built only with the cargo
//! feature `window-stats` (`cargo build --release -p lbsim-sim --features
//! window-stats`), when the run summary gains a `window_stats` object.
//! (The statistics themselves always compile, so plain `cargo test`
//! checks them; only the run loop's hook needs the feature.)
//!
//! A conservative parallel engine (Chandy–Misra–Bryant's lookahead, here
//! in synchronous windows) may handle every event of a window
//! `[w·L, (w+1)·L)` at once when `L` is at most the smallest link delay:
//! an event at one node reaches another node only as a packet crossing a
//! link, which takes at least that long, so nothing one partition does in
//! a window can change what another partition does in it. The nodes are
//! split into partitions by where they sit in the fabric ([`partition`]);
//! a window then costs as much as its busiest partition, and events that
//! belong to no node (scheme timers, link events, samples, flow arrivals,
//! UDP sends, incast requests) are counted as run by one core alone. So
//! `events / (Σ busiest + unowned)` bounds the speed-up before any cost of
//! synchronising the windows or of handing packets between partitions,
//! which `crossing_arrivals` counts. `windows` counts the windows with
//! events at nodes (the ones whose partitions would have to meet).
//!
//! The cut is by place, so it is even on the built-in fabrics whose racks,
//! pods and tiers divide by the partition count; otherwise (e.g. a 3-tier
//! Clos of 3 pods cut in 2, or an explicit topology, whose non-rack
//! switches are cut by node index) it may not be, which the per-partition
//! event counts show.
//!
//! What the bound leaves out, beyond those two costs: today a port's FIFO
//! is popped by the arrival event at the far end, and one scheme object
//! holds every switch's state, so the model itself would have to be split
//! by node first; and Clairvoyant reads every port, so it could not be
//! split at all.

use lbsim_engine::SimTime;
use lbsim_net::{NodeId, Tier, Topology};
use serde_json::{json, Value};

/// The cuts measured side by side: by place into 2 and into 4 ([`partition`]),
/// and by role into 2 ([`by_role`]). At most 4 partitions each (the
/// counters below).
const SPLITS: [(&str, u32); 3] = [("place", 2), ("place", 4), ("role", 2)];
const N: usize = SPLITS.len();

#[derive(Clone)]
#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
pub(crate) struct WindowStats {
    /// Window length L in ps (the smallest link delay); 0 = no lookahead.
    len: u64,
    /// Per split: node index -> partition.
    part: Vec<Vec<u8>>,
    window: u64,
    /// Per split: events and their cost per partition in the current window.
    cur: [[u64; 4]; N],
    cur_cost: [[u64; 4]; N],
    windows: u64,
    unowned: u64,
    unowned_cost: u64,
    /// Per split: Σ over windows of the busiest partition's events, and of
    /// the costliest partition's cost.
    busiest: [u64; N],
    costliest: [u64; N],
    /// Per split: arrivals whose link joins two partitions.
    crossing: [u64; N],
    /// Per split: events and their cost per partition over the whole run.
    by_part: [[u64; 4]; N],
    cost_by_part: [[u64; 4]; N],
    /// Windows by events in them: bucket b holds 2^b..2^(b+1)-1 events.
    sizes: [u64; 32],
}

/// A node's partition among `p`, by its place in the fabric: a host goes
/// with its rack, a leaf by its rack index, an aggregation switch by its
/// pod, a spine or core switch by its index in its tier, any other switch
/// by its node index. Racks, pods and each tier are cut into `p` equal runs.
#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
pub(crate) fn partition(topo: &Topology, p: u32) -> Vec<u8> {
    let count = |t: Tier| topo.nodes.iter().filter(|n| n.tier == t).count().max(1) as u64;
    let (spines, cores) = (count(Tier::Spine), count(Tier::Core));
    let three_tier = topo.nodes.iter().any(|n| n.tier == Tier::Core);
    let racks = topo.racks.len().max(1) as u64;
    let pods = topo.nodes.iter().map(|n| n.pod as u64).max().unwrap_or(0) + 1;
    let nodes = topo.nodes.len() as u64;
    let cut = |i: u64, n: u64| ((i * p as u64) / n).min(p as u64 - 1) as u8;
    topo.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| match n.tier {
            Tier::Host => cut(topo.host_rack[n.index as usize] as u64, racks),
            Tier::Leaf => cut(n.index as u64, racks),
            Tier::Spine if three_tier => cut(n.pod as u64, pods),
            Tier::Spine => cut(n.index as u64, spines),
            Tier::Core => cut(n.index as u64, cores),
            Tier::Other => cut(i as u64, nodes),
        })
        .collect()
}

/// Per split of [`SPLITS`]: node index -> partition.
fn cuts(topo: &Topology) -> Vec<Vec<u8>> {
    SPLITS.iter().map(|&(how, p)| if how == "role" { by_role(topo) } else { partition(topo, p) }).collect()
}

/// The cut by role: every host (with its transport and its NIC) in
/// partition 0, every switch in partition 1. Both ends of every connection
/// then sit in one partition, and every packet crosses twice (into the
/// fabric and out of it).
#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
pub(crate) fn by_role(topo: &Topology) -> Vec<u8> {
    topo.nodes.iter().map(|n| (n.tier != Tier::Host) as u8).collect()
}

#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
impl WindowStats {
    pub fn new(topo: &Topology) -> WindowStats {
        let len = topo.ports.iter().map(|p| p.delay.0).min().unwrap_or(0);
        WindowStats {
            len,
            part: cuts(topo),
            window: 0,
            cur: [[0; 4]; N],
            cur_cost: [[0; 4]; N],
            windows: 0,
            unowned: 0,
            unowned_cost: 0,
            busiest: [0; N],
            costliest: [0; N],
            crossing: [0; N],
            by_part: [[0; 4]; N],
            cost_by_part: [[0; 4]; N],
            sizes: [0; 32],
        }
    }

    /// One event at `t` that cost `cost` (the run loop passes CPU cycles):
    /// at `node` (`None`: it belongs to no node); `from` is the node that
    /// sent the packet of an arrival.
    pub fn record(&mut self, t: SimTime, node: Option<NodeId>, from: Option<NodeId>, cost: u64) {
        if self.len == 0 {
            return;
        }
        let w = t.0 / self.len;
        if w != self.window {
            self.close();
            self.window = w;
        }
        let Some(n) = node else {
            self.unowned += 1;
            self.unowned_cost += cost;
            return;
        };
        for s in 0..N {
            let p = self.part[s][n.idx()];
            self.cur[s][p as usize] += 1;
            self.cur_cost[s][p as usize] += cost;
            if from.is_some_and(|f| self.part[s][f.idx()] != p) {
                self.crossing[s] += 1;
            }
        }
    }

    /// Counts the events of the last picosecond recorded (each picosecond
    /// is counted when the next begins): called once the run ends.
    pub fn close(&mut self) {
        let n: u64 = self.cur[0].iter().sum();
        if n > 0 {
            self.windows += 1;
            self.sizes[(63 - n.leading_zeros()) as usize] += 1;
        }
        for s in 0..N {
            self.busiest[s] += self.cur[s].iter().max().unwrap();
            self.costliest[s] += self.cur_cost[s].iter().max().unwrap();
            for p in 0..4 {
                self.by_part[s][p] += self.cur[s][p];
                self.cost_by_part[s][p] += self.cur_cost[s][p];
            }
            self.cur[s] = [0; 4];
            self.cur_cost[s] = [0; 4];
        }
    }

    /// The summary's `window_stats` object, the last window closed.
    pub fn summary(&self) -> Value {
        let mut this = self.clone();
        this.close();
        this.report()
    }

    fn report(&self) -> Value {
        // every owned event is in one partition of each split (windows closed)
        let owned: u64 = self.by_part[0].iter().sum();
        let events = owned + self.unowned;
        let cost: u64 = self.cost_by_part[0].iter().sum::<u64>() + self.unowned_cost;
        let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
        let splits: Vec<Value> = SPLITS
            .iter()
            .enumerate()
            .map(|(s, &(how, p))| {
                let critical = self.busiest[s] + self.unowned;
                let critical_cost = self.costliest[s] + self.unowned_cost;
                json!({
                    "cut": how,
                    "partitions": p,
                    "events_by_partition": &self.by_part[s][..p as usize],
                    "critical_events": critical,
                    "speedup_bound": ratio(events, critical),
                    "cost_by_partition": &self.cost_by_part[s][..p as usize],
                    "critical_cost": critical_cost,
                    "speedup_bound_by_cost": ratio(cost, critical_cost),
                    "crossing_arrivals": self.crossing[s],
                    "crossing_share_of_owned": ratio(self.crossing[s], owned),
                })
            })
            .collect();
        // the median window's size bucket (over windows, not events)
        let mut acc = 0;
        let mut median = 0u64;
        for (b, &c) in self.sizes.iter().enumerate() {
            acc += c;
            if self.windows > 0 && 2 * acc >= self.windows {
                median = 1 << b;
                break;
            }
        }
        json!({
            "window_ps": self.len,
            "windows": self.windows,
            "events": events,
            "unowned_events": self.unowned,
            "cost": cost,
            "unowned_cost": self.unowned_cost,
            "events_per_window_mean": ratio(events, self.windows),
            "median_window_events_at_least": median,
            "window_sizes_log2": self.sizes.iter().rposition(|&c| c > 0).map_or(vec![], |last| self.sizes[..=last].to_vec()),
            "splits": splits,
        })
    }
}

/// Who scheduled an event, for [`TieStudy`]: when (`t`), which event (`id`,
/// its place in the run; `u64::MAX` for the run's start) and where (`node`,
/// [`Sched::NO_NODE`] for an event at no node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
pub(crate) struct Sched {
    pub t: SimTime,
    pub id: u64,
    pub node: u32,
}

#[cfg_attr(any(not(feature = "window-stats"), feature = "keyed-order"), allow(dead_code))]
impl Sched {
    pub const NO_NODE: u32 = u32::MAX;
    /// The start of the run, before any event.
    pub const START: Sched = Sched { t: SimTime::ZERO, id: u64::MAX, node: Sched::NO_NODE };
}

/// Could a run cut into partitions keep the serial queue's exact order
/// without merging the partitions' events at every meeting? (issue 19's
/// second core; bench/README.md, twelfth pass.)
///
/// The queue pops in `(time, insertion number)` order, and every event is
/// inserted while another is handled; so two events tied in time go in the
/// order their schedulers were handled, or, with one scheduler, in the order
/// it made them. A scheduler handled earlier in time is earlier; so only
/// ties between events whose schedulers were handled at the same time need
/// to know how the run interleaved those schedulers. A partition knows how
/// its own events interleave, and so does every partition for events at no
/// node (each would run them all). What it cannot know without asking is
/// how its own event and another partition's, handled at the same
/// picosecond, interleave. This counts, per cut, the pairs of events handled
/// at one time in one partition (`ties`), those of them whose distinct
/// schedulers were handled at one time (`scheduler_ties`), and those whose
/// schedulers also sat at nodes in two different partitions (`undecided`):
/// the pairs whose order such a run could not settle alone.
///
/// An event at no node counts with its scheduler's node, or not at all if
/// that is at no node too (every partition would run it).
#[cfg_attr(not(feature = "window-stats"), allow(dead_code))]
pub(crate) struct TieStudy {
    /// Per split: node index -> partition.
    part: Vec<Vec<u8>>,
    /// The time of the events in `group`.
    t: SimTime,
    /// The events handled at `t`: (their node, their scheduler).
    group: Vec<(u32, Sched)>,
    ties: [u64; N],
    scheduler_ties: [u64; N],
    undecided: [u64; N],
    /// Per split: the first time an undecided pair was handled.
    first_undecided: [Option<SimTime>; N],
    /// Per split: picoseconds at which two or more partitions handled
    /// events (the ones a run in windows by ancestry merges), and the events
    /// at them.
    shared: [u64; N],
    shared_events: [u64; N],
    /// Every event's scheduler, by the event's place in the run.
    by: Vec<Sched>,
    depth: [[u64; 8]; N],
}

#[cfg_attr(any(not(feature = "window-stats"), feature = "keyed-order"), allow(dead_code))]
impl TieStudy {
    pub fn new(topo: &Topology) -> TieStudy {
        TieStudy {
            part: cuts(topo),
            t: SimTime::ZERO,
            group: Vec::new(),
            ties: [0; N],
            scheduler_ties: [0; N],
            undecided: [0; N],
            first_undecided: [None; N],
            shared: [0; N],
            shared_events: [0; N],
            by: Vec::new(),
            depth: [[0; 8]; N],
        }
    }

    /// One event at `t`, at `node` (`None`: no node), scheduled by `by`.
    pub fn record(&mut self, t: SimTime, node: Option<NodeId>, by: Sched) {
        if t != self.t {
            self.close();
            self.t = t;
        }
        self.by.push(by);
        let node = node.map_or(by.node, |n| n.0);
        if node != Sched::NO_NODE {
            self.group.push((node, by));
        }
    }

    /// Counts the events of the last picosecond recorded (each picosecond
    /// is counted when the next begins): called once the run ends.
    pub fn close(&mut self) {
        for s in 0..N {
            let part = &self.part[s];
            if let Some(&(first, _)) = self.group.first() {
                if self.group.iter().any(|&(n, _)| part[n as usize] != part[first as usize]) {
                    self.shared[s] += 1;
                    self.shared_events[s] += self.group.len() as u64;
                }
            }
        }
        for (i, &(a, sa)) in self.group.iter().enumerate() {
            for &(b, sb) in &self.group[i + 1..] {
                for s in 0..N {
                    let part = &self.part[s];
                    if part[a as usize] != part[b as usize] {
                        continue;
                    }
                    self.ties[s] += 1;
                    if sa.t != sb.t || sa.id == sb.id {
                        continue;
                    }
                    self.scheduler_ties[s] += 1;
                    let at_nodes = sa.node != Sched::NO_NODE && sb.node != Sched::NO_NODE;
                    if at_nodes && part[sa.node as usize] != part[sb.node as usize] {
                        self.undecided[s] += 1;
                        self.first_undecided[s].get_or_insert(self.t);
                        // how far up their schedulers' schedulers the order is settled
                        let (mut x, mut y, mut d) = (sa, sb, 1usize);
                        while x.t == y.t
                            && x.id != y.id
                            && x.node != Sched::NO_NODE
                            && y.node != Sched::NO_NODE
                            && part[x.node as usize] != part[y.node as usize]
                        {
                            match (self.by.get(x.id as usize), self.by.get(y.id as usize)) {
                                (Some(&px), Some(&py)) => (x, y, d) = (px, py, d + 1),
                                _ => break,
                            }
                        }
                        self.depth[s][d.min(7)] += 1;
                    }
                }
            }
        }
        self.group.clear();
    }

    /// Per split, as `window_stats.splits[i].ties` (after [`TieStudy::close`]).
    pub fn summary(&self) -> Vec<Value> {
        debug_assert!(self.group.is_empty(), "the last picosecond is counted: closed");
        (0..N)
            .map(|s| {
                json!({
                    "ties": self.ties[s],
                    "scheduler_ties": self.scheduler_ties[s],
                    "undecided": self.undecided[s],
                    "first_undecided_ps": self.first_undecided[s].map(|t| t.0),
                    "undecided_depth": self.depth[s],
                    "shared_picoseconds": self.shared[s],
                    "events_at_shared_picoseconds": self.shared_events[s],
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbsim_engine::BitsPerSec;
    use lbsim_net::topology::{fat_tree, leaf_spine, LeafSpine};
    use lbsim_net::LinkSpec;

    fn link() -> LinkSpec {
        LinkSpec { rate: BitsPerSec(10_000_000_000), delay: SimTime(1_000_000) }
    }

    #[test]
    fn partitions_follow_racks_pods_and_tiers() {
        let t = leaf_spine(&LeafSpine { leaves: 4, spines: 2, links_per_pair: 1, hosts_per_leaf: vec![2; 4], host_link: link(), fabric_link: link() }).unwrap();
        let p = partition(&t, 2);
        for (i, n) in t.nodes.iter().enumerate() {
            let want = match n.tier {
                Tier::Host => (t.host_rack[n.index as usize] >= 2) as u8,
                Tier::Leaf => (n.index >= 2) as u8,
                Tier::Spine => n.index as u8,
                _ => unreachable!(),
            };
            assert_eq!(p[i], want, "{}", n.name);
        }
        let f = fat_tree(4, link(), link()).unwrap();
        let p = partition(&f, 4);
        for (i, n) in f.nodes.iter().enumerate() {
            if n.tier == Tier::Spine || n.tier == Tier::Leaf {
                assert_eq!(p[i] as u32, n.pod, "{}", n.name); // k = 4: one pod per partition
            }
        }
        assert!((0..4).all(|q| p.iter().filter(|&&x| x == q).count() == p.len() / 4), "equal parts: {p:?}");
    }

    #[test]
    fn windows_count_the_busiest_partition() {
        let t = leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 1, hosts_per_leaf: vec![1; 2], host_link: link(), fabric_link: link() }).unwrap();
        let mut s = WindowStats::new(&t);
        let leaf = |i: u32| NodeId(t.nodes.iter().position(|n| n.tier == Tier::Leaf && n.index == i).unwrap() as u32);
        let host0 = t.host(0);
        let us = |x: u64| SimTime(x * 1_000_000);
        // window 0: 3 events at leaf 0 costing 10 each, 1 at leaf 1 (an
        // arrival from leaf 0) costing 100
        for _ in 0..3 {
            s.record(us(0), Some(leaf(0)), None, 10);
        }
        s.record(SimTime(999_999), Some(leaf(1)), Some(leaf(0)), 100);
        // window 5: one event at each leaf, an arrival at host 0 (rack 0)
        // from leaf 0, one unowned
        s.record(us(5), Some(leaf(0)), None, 5);
        s.record(us(5), Some(leaf(1)), None, 5);
        s.record(us(5), Some(host0), Some(leaf(0)), 50);
        s.record(us(5), None, None, 7);
        let v = s.summary();
        assert_eq!(v["window_ps"], 1_000_000);
        assert_eq!(v["windows"], 2);
        assert_eq!(v["events"], 8);
        assert_eq!(v["cost"], 197);
        // by place (rack 0 | rack 1): busiest 3 + 2 events, costliest 100 +
        // 55, plus the unowned event; the leaf-to-leaf arrival crosses
        let place = &v["splits"][0];
        assert_eq!(place["critical_events"], 6);
        assert_eq!(place["speedup_bound"], 8.0 / 6.0);
        assert_eq!(place["critical_cost"], 162);
        assert_eq!(place["speedup_bound_by_cost"], 197.0 / 162.0);
        assert_eq!(place["cost_by_partition"], serde_json::json!([85, 105]));
        assert_eq!(place["crossing_arrivals"], 1);
        // by role (hosts | switches): busiest 4 + 2, costliest 130 + 50;
        // the arrival at the host crosses
        let role = &v["splits"][2];
        assert_eq!((role["cut"].as_str(), role["partitions"].as_u64()), (Some("role"), Some(2)));
        assert_eq!(role["events_by_partition"], serde_json::json!([1, 6]));
        assert_eq!(role["critical_events"], 7);
        assert_eq!(role["critical_cost"], 187);
        assert_eq!(role["speedup_bound_by_cost"], 197.0 / 187.0);
        assert_eq!(role["crossing_arrivals"], 1);
    }

    #[test]
    fn ties_are_undecided_only_between_schedulers_at_one_time_in_two_partitions() {
        // leaves 0 and 1 (partitions 0 and 1 by place), spines 0 and 1 (the
        // same by place; both switches by role), one host per leaf
        let t = leaf_spine(&LeafSpine { leaves: 2, spines: 2, links_per_pair: 1, hosts_per_leaf: vec![1; 2], host_link: link(), fabric_link: link() }).unwrap();
        let node = |tier: Tier, i: u32| NodeId(t.nodes.iter().position(|n| n.tier == tier && n.index == i).unwrap() as u32);
        let (l0, s0, s1) = (node(Tier::Leaf, 0), node(Tier::Spine, 0), node(Tier::Spine, 1));
        let by = |t: u64, id: u64, n: NodeId| Sched { t: SimTime(t), id, node: n.0 };
        let mut s = TieStudy::new(&t);
        // every event's scheduler, as the run loop records it: events 0-2
        // have theirs at times 0-2, at leaf 1
        let l1 = node(Tier::Leaf, 1);
        for i in 0..3 {
            s.record(SimTime(10 + i), Some(l1), by(i, u64::MAX, l1));
        }
        // at t = 100, leaf 0 handles four events: from spine 0's event 0 and
        // spine 1's event 1 (both handled at 50, in two partitions by place:
        // undecided), from spine 0's event 2 at 60 (an earlier scheduler
        // time: decided), and from spine 1's event 1 again (one scheduler:
        // its order of schedules decides)
        s.record(SimTime(100), Some(l0), by(50, 0, s0));
        s.record(SimTime(100), Some(l0), by(50, 1, s1));
        s.record(SimTime(100), Some(l0), by(60, 2, s0));
        s.record(SimTime(100), Some(l0), by(50, 1, s1));
        // an event at no node, scheduled at no node, is every partition's
        s.record(SimTime(100), None, Sched::START);
        // at t = 200, spine 1 and leaf 0 (two partitions by place): no tie
        s.record(SimTime(200), Some(s1), by(50, 0, s0));
        s.record(SimTime(200), Some(l0), by(50, 1, s1));
        s.close();
        let v = s.summary();
        // by place: 6 pairs at leaf 0; 3 have both schedulers at 50, and
        // of those the pair scheduled twice by event 1 has one scheduler, so
        // 2 scheduler ties, both across the cut; each is settled one step
        // up, by events 0 and 1's schedulers' times
        assert_eq!(v[0]["ties"], 6, "{v:?}");
        assert_eq!(v[0]["scheduler_ties"], 2, "{v:?}");
        assert_eq!(v[0]["undecided"], 2, "{v:?}");
        assert_eq!(v[0]["first_undecided_ps"], 100);
        assert_eq!(v[0]["undecided_depth"], serde_json::json!([0, 0, 2, 0, 0, 0, 0, 0]));
        // t = 200 is the one picosecond two partitions (by place) share
        assert_eq!((v[0]["shared_picoseconds"].as_u64(), v[0]["events_at_shared_picoseconds"].as_u64()), (Some(1), Some(2)));
        assert_eq!(v[2]["shared_picoseconds"], 0, "{v:?}");
        // by role both spines are switches: the same two ties, decided; and
        // the pair at t = 200 is a tie too (both switches)
        assert_eq!(v[2]["ties"], 7, "{v:?}");
        assert_eq!((v[2]["scheduler_ties"].as_u64(), v[2]["undecided"].as_u64()), (Some(3), Some(0)), "{v:?}");
    }
}

/// End to end, through the run loop's hook (`cargo test -p lbsim-sim
/// --features window-stats window_stats`, which CI runs).
#[cfg(all(test, feature = "window-stats"))]
mod run_tests {
    use crate::tests::{flow_file, run_ok};

    /// 4 leaves of 2 hosts (racks 0-3: partitions 0, 0, 1, 1 of 2 and 0-3
    /// of 4), `spines` spines, and the flow list `file`.
    fn fabric(spines: u32, file: &str) -> String {
        format!(
            r#"
[topology]
kind = "leaf_spine"
leaves = 4
spines = {spines}
links_per_pair = 1
hosts_per_leaf = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
link_delay_us = 1
[workload]
kind = "flow_list"
flow_list = "{file}"
"#
        )
    }

    #[test]
    fn a_flow_inside_one_rack_is_one_partitions_work() {
        // hosts 0 and 1 share leaf 0: partition 0 of 2 and of 4
        let out = run_ok(&fabric(2, &flow_file("ws-one-rack", &[(0, 1, 200_000, 0.0)])), &[]);
        let w = &out.summary["window_stats"];
        assert_eq!(w["events"], out.summary["events"]);
        assert_eq!(w["window_ps"], 1_000_000);
        for s in 0..2 {
            assert_eq!(w["splits"][s]["speedup_bound"], 1.0, "{w}");
            assert_eq!(w["splits"][s]["crossing_arrivals"], 0, "{w}");
        }
        // by role, every packet crosses twice: into leaf 0 (the switches'
        // only events) and out of it, but for the last packets in flight
        let role = &w["splits"][2];
        let at_leaf = role["events_by_partition"][1].as_u64().unwrap();
        let crossing = role["crossing_arrivals"].as_u64().unwrap();
        assert!(at_leaf > 100 && crossing <= 2 * at_leaf && crossing + 4 >= 2 * at_leaf, "{w}");
        // the cost is the run's cycles, all but the unowned flow arrival's
        // owned by hosts and switches
        let cost = |p: usize| role["cost_by_partition"][p].as_u64().unwrap();
        assert!(cost(0) > 0 && cost(1) > 0, "{w}");
        assert_eq!(cost(0) + cost(1) + w["unowned_cost"].as_u64().unwrap(), w["cost"].as_u64().unwrap(), "{w}");
    }

    #[test]
    fn mirrored_flows_in_two_halves_split_evenly() {
        // rack 0 (hosts 0, 1) and rack 3 (hosts 6, 7): partitions 0 and 1 of 2
        let out = run_ok(&fabric(2, &flow_file("ws-mirrored", &[(0, 1, 200_000, 0.0), (6, 7, 200_000, 0.0)])), &[]);
        let w = &out.summary["window_stats"];
        // the same work in each half, though not in the same windows (each
        // packet leaving a host is delayed by its own draw of host jitter),
        // so the bound stays below 2
        let n = w["splits"][0]["events_by_partition"][0].as_u64().unwrap();
        assert_eq!(w["splits"][0]["events_by_partition"], serde_json::json!([n, n]), "{w}");
        assert_eq!(w["splits"][1]["events_by_partition"], serde_json::json!([n, 0, 0, n]), "{w}");
        assert_eq!(2 * n + 2, w["events"].as_u64().unwrap(), "two unowned flow arrivals: {w}");
        assert!(w["splits"][0]["speedup_bound"].as_f64().unwrap() > 1.5, "{w}");
        assert_eq!(w["splits"][0]["crossing_arrivals"], 0, "{w}");
    }

    /// The study's clock ([`crate::world::Traced`]) keeps the serial
    /// queue's order: every output as the plain queue's, for schemes with
    /// hooks, timers and packets of their own.
    #[test]
    fn the_traced_clock_gives_the_serial_results() {
        use crate::world::Ev;
        use lbsim_engine::EventQueue;
        let text = include_str!("../../../examples/clove_testbed.toml");
        for scheme in ["ecmp", "letflow", "conga", "hula", "clove_int", "drill", "mptcp"] {
            let lb = format!("lb.scheme=\"{scheme}\"");
            let sc = crate::Scenario::from_toml(text, &["workload.flows=40".to_string(), lb]).unwrap();
            let traced = crate::run(&sc, None, &mut |_| true).unwrap();
            let plain = crate::run_on::<EventQueue<Ev>>(&sc, None, &mut |_| true).unwrap();
            assert!(traced.summary["events"].as_u64().unwrap() > 20_000, "{scheme}");
            assert_eq!(traced.summary["events"], plain.summary["events"], "{scheme}");
            assert_eq!(traced.summary["flows_digest"], plain.summary["flows_digest"], "{scheme}");
            assert_eq!(format!("{:?}", traced.flows), format!("{:?}", plain.flows), "{scheme}");
            let ties = &traced.summary["window_stats"]["splits"][0]["ties"];
            assert!(ties["ties"].as_u64().unwrap() > 0, "{scheme}: {ties}");
        }
    }

    /// Eight flows from rack 1 to rack 0 (both in partition 0 of 2 by
    /// place) start at once with no host jitter: their first packets reach
    /// leaf 1 at one time, leave on its two uplinks at one time, and the
    /// two spines (partitions 0 and 1 by place) forward them to leaf 0 at
    /// one time. At leaf 0 the two arrivals tie,
    /// and so do the spines' events that scheduled them: their order is
    /// undecided in partition 0 by place, and settled one step up (both
    /// spines' arrivals were scheduled by leaf 1's events). By role every
    /// switch is in one partition, so nothing is undecided.
    #[test]
    fn simultaneous_flows_through_two_spines_leave_undecided_ties() {
        let rows: Vec<(u32, u32, u64, f64)> = (0..8).map(|i| (2 + i % 2, i % 2, 20_000, 0.0)).collect();
        let out = run_ok(&fabric(2, &flow_file("ws-ties", &rows)), &["network.host_jitter_ns=0"]);
        let w = &out.summary["window_stats"];
        let place = &w["splits"][0]["ties"];
        let undecided = place["undecided"].as_u64().unwrap();
        assert!(undecided > 0 && place["undecided_depth"][2].as_u64() == Some(undecided), "{w}");
        assert_eq!(w["splits"][2]["ties"]["undecided"], 0, "{w}");
    }

    #[test]
    fn an_arrival_counts_where_the_packet_arrives() {
        // UDP from host 2 (rack 1) to host 6 (rack 3) over the one spine
        // (partition 0 of 4): each packet arrives at leaf 1, the spine, leaf 3
        // and host 6, so partitions 1, 0, 3, 3 (counted at the sending ends
        // instead it would be host 2, leaf 1, the spine, leaf 3: 1, 1, 0, 3).
        // The TCP flow in rack 0 keeps to partition 0 and outlasts the UDP
        // source (~2.4 ms against 1 ms), so every datagram arrives; a UDP
        // send is unowned.
        let sets = ["udp=[{src=2, dst=6, rate_gbps=2.0, stop_ms=1.0}]"];
        let out = run_ok(&fabric(1, &flow_file("ws-udp", &[(0, 1, 3_000_000, 0.0)])), &sets);
        let u = &out.summary["udp"][0];
        let n = u["recv_pkts"].as_u64().unwrap();
        assert!(n > 100 && u["sent_pkts"].as_u64() == Some(n), "{u}");
        let w = &out.summary["window_stats"];
        let by = &w["splits"][1]["events_by_partition"];
        assert_eq!((by[1].as_u64(), by[2].as_u64(), by[3].as_u64()), (Some(n), Some(0), Some(2 * n)), "{w}");
        // leaf 1 -> spine and spine -> leaf 3 cross; the rack-0 flow's hops do not
        assert_eq!(w["splits"][1]["crossing_arrivals"].as_u64(), Some(2 * n), "{w}");
    }
}
