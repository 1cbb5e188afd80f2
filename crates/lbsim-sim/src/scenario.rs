//! Scenario files (TOML). Every parameter is named with its unit
//! (`rate_gbps`, `delay_us`, `buffer_pkts`) and has a default; unknown keys
//! and out-of-range values are errors that name the field.
//!
//! ```toml
//! name = "b1"
//! seed = 1
//! [topology]
//! kind = "leaf_spine"          # leaf_spine | clos3 | fat_tree | explicit
//! leaves = 2
//! spines = 2
//! links_per_pair = 2
//! hosts_per_leaf = 16          # or a list, one per leaf
//! host_rate_gbps = 10
//! fabric_rate_gbps = 40
//! link_delay_us = 1
//! [network]
//! buffer_pkts = 250
//! [transport]
//! cc = "newreno"
//! min_rto_ms = 10
//! [workload]
//! kind = "poisson"
//! cdf = "websearch"
//! load = 0.6
//! load_of = "leaf_uplinks"
//! flows = 5000
//! [lb]
//! scheme = "ecmp"
//! ```
//! See `examples/` for every section, commented.
//!
//! This module is the schema and its checks only: the larger sections live
//! in `scenario/` (topology, transport, the memory checks, the shared value
//! checks), and
//! `crate::resolve` turns a checked scenario into the run's fabric, TCP
//! configuration and scheme parameters.

mod check;
mod memory;
mod rdma;
mod topology;
mod transport;

pub use memory::MAX_HOSTS;
#[cfg(test)]
pub(crate) use memory::{BYTES_PER_CONN, BYTES_PER_FLOW};
pub use rdma::{AckClass, RdmaCfg, TransportKind};
pub use topology::{Clos3Cfg, ExplicitCfg, ExplicitLinkCfg, ExplicitNodeCfg, FatTreeCfg, HostsPerLeaf, HpccTopoCfg, LeafSpineCfg, TopologyCfg};
pub use transport::{Connections, TransportCfg};

use check::{dur_ms, dur_us, pos, rate, unit_bytes};
use lbsim_engine::SimTime;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A scenario error: the dotted path of the offending field and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub field: String,
    pub msg: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "scenario: {}", self.msg)
        } else {
            write!(f, "scenario field `{}`: {}", self.field, self.msg)
        }
    }
}
impl std::error::Error for ScenarioError {}

pub(crate) fn bad(field: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError { field: field.into(), msg: msg.into() }
}

/// The traffic patterns `workload.pattern` accepts.
/// Where a workload's flows come from (`workload.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Poisson,
    PerSender,
    FlowList,
    Incast,
    Collective,
    /// The HPCC simulator's flow file (`workload.file`).
    Hpcc,
    #[serde(rename = "none")]
    Nothing,
}

/// The capacity `workload.load` is a fraction of (`workload.load_of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadOf {
    HostLinks,
    LeafUplinks,
    Bisection,
    BottleneckTier,
}

/// Who sends to whom (`workload.pattern`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    InterRack,
    AllToAll,
    Stride,
    Bijection,
    RandomInterPod,
    BijectionInterPod,
}

/// What a host NIC does when its queue is full (`network.host_nic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostNic {
    Backpressure,
    DropTail,
}

/// Which ports mark ECN (`network.ecn_ports`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnPorts {
    Switch,
    Fabric,
}

/// The links a random failure draws from (`random_failures[].tier`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureTier {
    TorAgg,
    AggCore,
}

/// How a job's ranks are placed on free hosts (`jobs[].placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Packed,
    Spread,
    Random,
}

impl WorkloadKind {
    /// Flows drawn from a size distribution by lbsim (poisson, per_sender).
    pub fn generated(self) -> bool {
        matches!(self, WorkloadKind::Poisson | WorkloadKind::PerSender)
    }
}

/// The scenario word of a choice read from its word (its serde name), for
/// messages.
pub fn word_of<T: Serialize>(v: T) -> String {
    serde_json::to_value(v).ok().and_then(|x| x.as_str().map(str::to_string)).unwrap_or_default()
}

fn one() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A label, printed in the summary.
    #[serde(default)]
    pub name: String,
    /// Seeds every random stream of the run (workload, schemes, jitter,
    /// failures): same scenario and seed, identical output files.
    #[serde(default = "one")]
    pub seed: u64,
    pub topology: TopologyCfg,
    #[serde(default)]
    pub network: NetworkCfg,
    #[serde(default)]
    pub transport: TransportCfg,
    #[serde(default)]
    pub rdma: RdmaCfg,
    #[serde(default)]
    pub workload: WorkloadCfg,
    #[serde(default)]
    pub lb: LbCfg,
    #[serde(default)]
    pub failures: Vec<FailureCfg>,
    #[serde(default)]
    pub random_failures: Vec<RandomFailureCfg>,
    #[serde(default)]
    pub link_overrides: Vec<LinkOverrideCfg>,
    #[serde(default)]
    pub drops: Vec<DropCfg>,
    #[serde(default)]
    pub udp: Vec<UdpCfg>,
    #[serde(default)]
    pub jobs: Vec<JobCfg>,
    #[serde(default)]
    pub metrics: MetricsCfg,
    #[serde(default)]
    pub run: RunCfg,
}

fn d1() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}

/// A deserialiser message in words: Rust type names become what a user
/// writes ("a non-negative integer", "a number").
fn human(msg: &str) -> String {
    let mut m = msg.trim().replace('\n', " ");
    for (rust, words) in [
        ("expected u8", "expected a non-negative integer (up to 255)"),
        ("expected u16", "expected a non-negative integer (up to 65535)"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
    ] {
        m = m.replace(rust, words);
    }
    // numbers the deserialiser quotes in full ("floating point `1000...0.0`")
    // are written short
    if let Some(i) = m.find("floating point `") {
        let start = i + "floating point `".len();
        if let Some(len) = m[start..].find('`') {
            if let Ok(x) = m[start..start + len].parse::<f64>() {
                m.replace_range(start..start + len, &lbsim_engine::fmt_num(x));
            }
        }
    }
    // the TOML deserialiser repeats the key ("... in `leaves`"): the field
    // is already named
    if let Some(i) = m.rfind(" in `") {
        if m.ends_with('`') {
            m.truncate(i);
        }
    }
    // an unknown word of an enum: `must be "a", "b" or "c", got "x"`
    if let Some(rest) = m.strip_prefix("unknown variant `") {
        if let Some((got, expected)) = rest.split_once("`, expected ") {
            let words: Vec<String> =
                expected.trim_start_matches("one of ").split(", ").flat_map(|w| w.split(" or ")).map(|w| format!("{:?}", w.trim_matches('`'))).collect();
            return check::must_be(&words, got);
        }
    }
    m
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NetworkCfg {
    /// Switch egress buffer per port, packets (default 250 when no limit is given).
    pub buffer_pkts: Option<u32>,
    /// Switch egress buffer per port, bytes (instead of packets).
    pub buffer_bytes: Option<u64>,
    /// Host NIC buffer, packets (default: the switch buffer).
    pub host_buffer_pkts: Option<u32>,
    /// "backpressure" (default): like Linux, a full NIC queue makes TCP wait
    /// (TSQ / qdisc back-pressure), it never loses its own packets; UDP is
    /// dropped. "drop_tail": the NIC drops like a switch port (ns-2/ns-3).
    #[serde(default, deserialize_with = "check::some_word")]
    pub host_nic: Option<HostNic>,
    /// Host send jitter, ns: each packet a host sends reaches its leaf up to
    /// this much later (uniform, order kept). Breaks the deterministic
    /// phase effects of drop-tail queues (Floyd & Jacobson 1992) that make
    /// identical flows unfair in any exact-time simulator. Default 1000 ns.
    pub host_jitter_ns: Option<f64>,
    /// ECN marking threshold on the instantaneous queue, packets (off if absent).
    pub ecn_k_pkts: Option<u32>,
    /// ECN marking threshold, bytes (instead of packets).
    pub ecn_k_bytes: Option<u64>,
    /// Which ports mark: "switch" (default: every switch egress port, the
    /// ToR ports toward hosts included, as a real ToR does) or "fabric"
    /// (switch-to-switch ports only). A host NIC never marks: a NIC or
    /// qdisc does not set CE, and a mark from the sender's own queue would
    /// tell an edge scheme nothing about paths.
    #[serde(default, deserialize_with = "check::some_word")]
    pub ecn_ports: Option<EcnPorts>,
}

fn s(x: &str) -> String {
    x.to_string()
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadCfg {
    /// "poisson", "per_sender", "flow_list", "incast", "collective" (no
    /// flows of its own: the `[[jobs]]` are the traffic), "hpcc" (the HPCC
    /// simulator's flow file, `workload.file`) or "none".
    #[serde(deserialize_with = "check::word")]
    pub kind: WorkloadKind,
    /// A built-in CDF name (see `lbsim-workload`) ...
    pub cdf: String,
    /// ... or a file of `bytes cdf` lines.
    pub cdf_file: Option<String>,
    /// Bytes per packet for packet-form CDFs.
    pub cdf_unit_bytes: Option<f64>,
    /// Every flow this size instead of a CDF.
    pub size_bytes: Option<u64>,
    /// Pareto flow sizes instead of a CDF (VMS §V-E, AG §VI-C).
    pub pareto: Option<ParetoCfg>,
    /// A mixture of flow classes instead of one size distribution: each has
    /// a name, a share of the flows and its own sizes; flows.parquet labels
    /// every flow with its class and the summary reports FCTs per class.
    pub classes: Vec<ClassCfg>,
    /// Offered load as a fraction of the capacity named by `load_of`.
    pub load: f64,
    /// Flow arrivals per second (kind = "poisson"), instead of deriving the
    /// rate from `load` (which is then ignored; the summary prints the load
    /// this rate offers).
    pub rate_per_s: Option<f64>,
    /// The capacity `load` is a fraction of: "leaf_uplinks" (the sending
    /// leaves' uplinks), "host_links" (the senders' links), "bisection" (half
    /// the smallest per-tier sum of uplink rates) or "bottleneck_tier" (the
    /// smallest per-tier sum of uplink rates); printed in the summary.
    #[serde(deserialize_with = "check::word")]
    pub load_of: LoadOf,
    /// Overrides the capacity the load refers to, Gb/s.
    pub capacity_gbps: Option<f64>,
    /// Allow load >= 1 of the named capacity.
    pub allow_overload: bool,
    /// Flows to generate (kinds poisson and per_sender).
    pub flows: usize,
    /// Time of the first arrival.
    pub start_us: f64,
    /// kind = "per_sender": mean of the exponential gaps between
    /// consecutive senders' starts, µs (0: all start at `start_us`).
    pub start_gap_us: f64,
    /// "inter_rack", "all_to_all", "stride", "bijection", "random_inter_pod",
    /// "bijection_inter_pod".
    #[serde(deserialize_with = "check::word")]
    pub pattern: PatternKind,
    /// Inter-pod patterns: only hosts of these pods send and receive (all if empty).
    pub pods: Vec<u32>,
    /// pattern = "stride": host h sends to host h + stride (mod hosts).
    pub stride: u32,
    /// pattern = "inter_rack": senders only under these racks (all if empty).
    pub src_racks: Vec<u32>,
    /// pattern = "inter_rack": receivers only under these racks (all if empty).
    pub dst_racks: Vec<u32>,
    /// CSV `src,dst,size_bytes,start_us` (kind = "flow_list").
    pub flow_list: Option<String>,
    /// The HPCC simulator's flow file (kind = "hpcc": the count, then
    /// `src dst priority dport size start_s` per flow, node ids of an
    /// hpcc topology; docs/rdma.md).
    pub file: Option<String>,
    pub incast: IncastCfg,
}

impl Default for WorkloadCfg {
    fn default() -> Self {
        WorkloadCfg {
            kind: WorkloadKind::Poisson,
            cdf: s("websearch"),
            cdf_file: None,
            cdf_unit_bytes: None,
            size_bytes: None,
            pareto: None,
            classes: vec![],
            load: 0.5,
            rate_per_s: None,
            load_of: LoadOf::LeafUplinks,
            capacity_gbps: None,
            allow_overload: false,
            flows: 1000,
            start_us: 0.0,
            start_gap_us: 0.0,
            pattern: PatternKind::InterRack,
            pods: vec![],
            stride: 1,
            src_racks: vec![],
            dst_racks: vec![],
            flow_list: None,
            file: None,
            incast: IncastCfg::default(),
        }
    }
}

/// A Pareto flow-size distribution: shape α and either its mean or its
/// minimum; with `max_bytes` a bounded Pareto (needed for shape <= 1).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParetoCfg {
    /// Shape α (> 0; > 1 unless `max_bytes` bounds it). Smaller is heavier-tailed.
    pub shape: f64,
    /// Mean flow size (exclusive with `min_bytes`).
    pub mean_bytes: Option<f64>,
    /// Smallest flow size, the Pareto's scale (exclusive with `mean_bytes`).
    pub min_bytes: Option<f64>,
    /// Largest flow size: a bounded Pareto (optional).
    pub max_bytes: Option<f64>,
}

impl ParetoCfg {
    /// The distribution, or an error naming `prefix.<field>`.
    pub fn build(&self, prefix: &str) -> Result<lbsim_workload::Pareto, ScenarioError> {
        let r = match (self.mean_bytes, self.min_bytes) {
            (Some(m), None) => lbsim_workload::Pareto::with_mean(self.shape, m, self.max_bytes),
            (None, Some(l)) => lbsim_workload::Pareto::new(self.shape, l, self.max_bytes),
            _ => return Err(bad(prefix.to_string(), "give exactly one of mean_bytes and min_bytes")),
        };
        r.map_err(|(field, msg)| bad(format!("{prefix}.{field}"), msg))
    }
}

/// One class of a flow mixture (`[[workload.classes]]`): its sizes are given
/// like the workload's own (`size_bytes`, `pareto`, `cdf` or `cdf_file`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassCfg {
    /// Class label (in flows.parquet's `class` column and the summary).
    pub name: String,
    /// Share of the flows (by count) in this class; the shares sum to 1.
    pub fraction: f64,
    /// Every flow of the class this size.
    pub size_bytes: Option<u64>,
    /// Pareto sizes.
    pub pareto: Option<ParetoCfg>,
    /// A built-in CDF name.
    pub cdf: Option<String>,
    /// A CDF file of `bytes cdf` lines.
    pub cdf_file: Option<String>,
    /// Bytes per packet for a packet-form CDF.
    pub cdf_unit_bytes: Option<f64>,
}

/// Partition-aggregate incast (CONGA §5.3, Clove §5.3): a client requests
/// `request_bytes` split evenly across `fan_in` servers; all respond at once;
/// the next request goes out when the last byte of the previous arrives.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IncastCfg {
    /// Host index of the client.
    pub client: u32,
    /// Candidate servers (host indices); empty: every other host.
    pub servers: Vec<u32>,
    /// Servers answering each request (drawn from `servers`).
    pub fan_in: u32,
    /// Bytes per request, split evenly over the servers.
    pub request_bytes: u64,
    /// Requests in sequence.
    pub requests: u32,
}

impl Default for IncastCfg {
    fn default() -> Self {
        IncastCfg { client: 0, servers: vec![], fan_in: 8, request_bytes: 10_000_000, requests: 10 }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LbCfg {
    /// The load-balancing scheme (`lbsim schemes` lists them).
    pub scheme: String,
    /// The scheme's parameters (`lbsim schemes` gives names, units, defaults).
    pub params: toml::Table,
    /// The RTT that every "RTT"-denominated scheme parameter means (Clove's
    /// flowlet gap, relay interval, ...), µs: state the paper's or your
    /// fabric's loaded RTT. Absent: the fabric's idle host-to-host RTT,
    /// which is far shorter than a testbed's. A scheme's own
    /// `lb.params.rtt_us` overrides it. Printed as `scheme.resolved`.
    pub rtt_us: Option<f64>,
}

impl Default for LbCfg {
    fn default() -> Self {
        LbCfg { scheme: s("ecmp"), params: toml::Table::new(), rtt_us: None }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropCfg {
    /// Egress port name, e.g. "L0->S0#0".
    pub port: String,
    /// From this time on, the next `count` TCP data packets offered to the
    /// port are dropped (one-packet loss experiments, VMS Fig. 9).
    pub at_ms: f64,
    /// Packets to drop.
    #[serde(default = "one_u32")]
    pub count: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureCfg {
    /// Link name, e.g. "L1-S1#0" (wildcards allowed; "#k" omitted = all parallel links).
    pub link: String,
    /// When the link goes down (0: from the start).
    #[serde(default)]
    pub at_ms: f64,
    /// Bring it back at this time (optional).
    pub restore_ms: Option<f64>,
}

/// `count` links of one tier inside one pod of a 3-tier fabric, drawn at
/// random from the scenario seed's "failures" stream, with at most
/// `max_per_switch` failed links at any switch (Expeditus §6.5). The drawn
/// links are listed in the summary (`topology.random_failures`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFailureCfg {
    /// "tor_agg" or "agg_core".
    #[serde(deserialize_with = "check::word")]
    pub tier: FailureTier,
    /// The pod whose links fail.
    pub pod: u32,
    /// Links to fail.
    pub count: u32,
    /// Most failed links at any one switch.
    #[serde(default = "two")]
    pub max_per_switch: u32,
    /// When they go down.
    #[serde(default)]
    pub at_ms: f64,
}

fn two() -> u32 {
    2
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverrideCfg {
    /// Link name or pattern (as in `failures`).
    pub link: String,
    /// New rate for the matched links (absent: unchanged).
    pub rate_gbps: Option<f64>,
    /// New propagation delay (absent: unchanged).
    pub delay_us: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpCfg {
    /// Sending host index.
    pub src: u32,
    /// Receiving host index.
    pub dst: u32,
    /// Constant bit rate. Above the source's link (or the destination's),
    /// the excess is dropped there and the flows on that link wait behind a
    /// full queue: `validate` and `run` warn, naming this key and the link,
    /// and so does the warning after a run that leaves those flows unfinished.
    pub rate_gbps: f64,
    /// Start sending.
    #[serde(default)]
    pub start_ms: f64,
    /// Stop sending (absent: never).
    pub stop_ms: Option<f64>,
    /// Packet size on the wire.
    #[serde(default = "d1500")]
    pub packet_bytes: u32,
    /// Pin the source to the path through this switch (a spine, say):
    /// wherever one of a packet's next hops is that switch, it goes there,
    /// bypassing the load balancer (background traffic on a chosen path).
    pub via: Option<String>,
}

fn d1500() -> u32 {
    1500
}

/// A job's ranks: how many (placed by `placement`), or the hosts themselves.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Ranks {
    Count(u32),
    Hosts(Vec<u32>),
}

fn s_all_reduce() -> String {
    s("all_reduce")
}
fn packed() -> Placement {
    Placement::Packed
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobCfg {
    /// A label for the job's rows (absent: "job<i>").
    pub name: Option<String>,
    /// The ranks: a count, placed by `placement`, or a list of host indices
    /// (rank i on the i-th host; the ring follows this order). One rank per
    /// host.
    pub ranks: Ranks,
    /// With a rank count: "packed" (the first free hosts in host order,
    /// rack by rack), "spread" (rank k under the k-th rack with a free host,
    /// round robin over the racks, so ring neighbours sit under different
    /// racks) or "random" (uniformly among the free hosts, from the seed's
    /// "jobs" stream). Hosts taken by earlier jobs are not free.
    #[serde(default = "packed", deserialize_with = "check::word")]
    pub placement: Placement,
    /// "all_reduce" (ring), "all_gather" (ring), "reduce_scatter" (ring),
    /// "all_to_all" or "all_reduce_hd" (recursive halving-doubling, a
    /// power-of-two number of ranks).
    #[serde(default = "s_all_reduce")]
    pub op: String,
    /// The message: the all-reduce buffer, the all-gather output, the
    /// reduce-scatter input or one rank's all-to-all send buffer (the
    /// collective benchmarks' convention); at least ranks x channels.
    pub size_bytes: u64,
    /// Iterations of the collective, one after the other.
    #[serde(default = "one_u32")]
    pub iterations: u32,
    /// Compute time between an iteration's last byte received and the next
    /// iteration's start.
    #[serde(default)]
    pub gap_us: f64,
    /// TCP connections per rank pair (as collective libraries open several
    /// channels): each send is split evenly over them.
    #[serde(default = "one_u32")]
    pub channels: u32,
    /// When the first iteration starts.
    #[serde(default)]
    pub start_us: f64,
}

impl JobCfg {
    /// The number of ranks, whatever form `ranks` takes.
    pub fn n_ranks(&self) -> u32 {
        match &self.ranks {
            Ranks::Count(n) => *n,
            Ranks::Hosts(h) => h.len() as u32,
        }
    }

    /// Checks what does not need the fabric (`i`: its index in `jobs`);
    /// hosts and placements are checked when the fabric is built.
    fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("jobs[{i}].{k}");
        let op = lbsim_workload::CollOp::from_name(&self.op)
            .ok_or_else(|| bad(key("op"), format!("must be one of {}; got {:?}", lbsim_workload::COLL_OPS.join(", "), self.op)))?;
        let n = self.n_ranks();
        op.check_ranks(n).map_err(|m| bad(key("ranks"), m))?;
        if let Ranks::Hosts(h) = &self.ranks {
            let mut seen = std::collections::BTreeSet::new();
            if let Some(d) = h.iter().find(|&&x| !seen.insert(x)) {
                return Err(bad(key("ranks"), format!("host {d} appears twice (one rank per host)")));
            }
        }
        if !(1..=64).contains(&self.channels) {
            return Err(bad(key("channels"), format!("must be 1 to 64; got {}", self.channels)));
        }
        if self.iterations == 0 {
            return Err(bad(key("iterations"), "must be >= 1"));
        }
        if self.size_bytes == 0 {
            return Err(bad(key("size_bytes"), "must be >= 1"));
        }
        // the smallest send (a chunk of size / n, rounded down), split over
        // the channels, must carry a byte
        let smallest = self.size_bytes / n as u64;
        if smallest < self.channels as u64 {
            return Err(bad(
                key("size_bytes"),
                format!(
                    "{} bytes over {n} ranks leave {smallest}-byte sends, fewer than the {} channels: some flows would be empty",
                    self.size_bytes, self.channels
                ),
            ));
        }
        dur_us(&key("gap_us"), self.gap_us, false)?;
        dur_us(&key("start_us"), self.start_us, false)?;
        Ok(())
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsCfg {
    /// Bucket edges for the per-size FCT summary, bytes.
    pub size_buckets_bytes: Vec<u64>,
    /// Percentiles reported besides p50, p95 and p99 in every FCT and
    /// slowdown summary, in percent (e.g. [99.9, 99.99] adds "p99_9" and
    /// "p99_99": AG Fig. 9d).
    pub percentiles: Vec<f64>,
    /// Ports (or links, both directions) to sample throughput on.
    pub link_samplers: Vec<String>,
    /// Per-flow receive-side goodput (bytes newly in order at the receiving
    /// transport) per window of this many ms; 0 = off.
    pub flow_rate_window_ms: f64,
    /// Sample the scheme's state (AG: train size, congested paths, path
    /// delays; VMS: each flow's ΣW, channels in use, channel 0's window and
    /// alpha) every this many µs; 0 = off.
    pub scheme_sample_interval_us: f64,
    /// Sample every busy connection's congestion window and slow-start
    /// threshold (cwnd.parquet), or with RDMA every busy queue pair's rates
    /// (qp_rates.parquet), every this many µs; 0 = off.
    pub cwnd_sample_interval_us: f64,
    /// Ports whose admitted packets are captured to pcap files (headers
    /// only), at most `pcap_max_packets` in all.
    pub pcap_ports: Vec<String>,
    /// Most packets captured in all.
    pub pcap_max_packets: u64,
    /// Record per flow the source-leaf uplinks its data took (uplinks_used,
    /// path_changes in flows.parquet); off by default (it costs ~2 % of the
    /// run time of B1), always on when there are `[[jobs]]` (steps.parquet
    /// names the uplink of each step's slowest flow).
    pub path_record: bool,
    /// Window of the link samplers' utilisation and imbalance.
    pub utilization_window_ms: f64,
    /// Ports to sample queue length on.
    pub queue_samplers: Vec<String>,
    /// Interval of the queue samplers.
    pub queue_sample_interval_us: f64,
    /// Idle gaps (µs) at which to cut each connection's data into flowlets
    /// as seen at the sender's NIC, as CONGA §2.6 measured a production
    /// trace (Fig. 5); the summary's `flowlets_observed` gives, per gap, the
    /// byte-weighted quantiles of flowlet size. Empty: not measured.
    pub flowlet_gaps_us: Vec<f64>,
}

impl Default for MetricsCfg {
    fn default() -> Self {
        MetricsCfg {
            size_buckets_bytes: vec![100_000, 10_000_000],
            percentiles: vec![],
            link_samplers: vec![],
            flow_rate_window_ms: 0.0,
            scheme_sample_interval_us: 0.0,
            cwnd_sample_interval_us: 0.0,
            pcap_ports: vec![],
            pcap_max_packets: 100_000,
            path_record: false,
            utilization_window_ms: 10.0,
            queue_samplers: vec![],
            queue_sample_interval_us: 100.0,
            flowlet_gaps_us: vec![],
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunCfg {
    /// Hard stop, ms of simulated time. Absent: `stop_after_last_start_ms`
    /// after the last flow starts (poisson, per_sender, flow_list); one hour
    /// of simulated time (3,600,000 ms) for incast and for collective jobs,
    /// which end the run themselves when the requests or the jobs' iterations
    /// are done; required for `kind = "none"` without jobs.
    pub stop_ms: Option<f64>,
    /// Stop this long after the last flow started even if flows remain (ms).
    pub stop_after_last_start_ms: f64,
}

impl Default for RunCfg {
    fn default() -> Self {
        RunCfg { stop_ms: None, stop_after_last_start_ms: 20_000.0 }
    }
}

// ------------------------------------------------------------------ parsing

/// Applies `key=value` overrides (TOML value syntax; bare words are strings).
/// Setting `topology.kind` to another kind starts `[topology]` afresh (the
/// old kind's keys do not apply): set the new kind's keys after it.
pub fn apply_overrides(doc: &mut toml::Table, sets: &[String]) -> Result<(), ScenarioError> {
    for kv in sets {
        let (k, v) = kv.split_once('=').ok_or_else(|| bad(kv.as_str(), "override must be key=value"))?;
        let (k, v) = (k.trim(), v.trim());
        let val: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {v}")) {
            Ok(mut t) => t.remove("v").unwrap(),
            Err(_) => toml::Value::String(v.to_string()),
        };
        let parts: Vec<&str> = k.split('.').collect();
        if k == "topology.kind" {
            // another kind of fabric: the old kind's keys do not apply to it
            if let Some(toml::Value::Table(old)) = doc.get_mut("topology") {
                if old.get("kind") != Some(&val) {
                    old.clear();
                }
            }
        }
        let mut t = &mut *doc;
        for p in &parts[..parts.len() - 1] {
            let e = t.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            t = e.as_table_mut().ok_or_else(|| bad(k, format!("`{p}` is not a table")))?;
        }
        t.insert(parts[parts.len() - 1].to_string(), val);
    }
    Ok(())
}

/// Scenario TOML text as a table, with `key=value` overrides applied; a
/// syntax error names its line and column.
fn parse_doc(text: &str, sets: &[String]) -> Result<toml::Table, ScenarioError> {
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|sp| {
            let before = &text[..sp.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!(" at line {line}, column {col}")
        });
        bad("", format!("not valid TOML{}: {}", at.unwrap_or_default(), e.message().trim().replace('\n', " ")))
    })?;
    apply_overrides(&mut doc, sets)?;
    Ok(doc)
}

/// The scenario as a run sees it, as TOML text: `text` with the overrides
/// applied and the files it names (`workload.flow_list`, `cdf_file`, `file`,
/// each class's `cdf_file`, `topology.file`) made absolute from `base_dir`,
/// so that it replays from anywhere (`lbsim run` writes it beside the
/// results as scenario.toml). Unchanged, it is `text` itself, comments
/// kept (and a large explicit topology not written out again).
pub fn resolved_toml(text: &str, sets: &[String], base_dir: Option<&std::path::Path>) -> Result<String, ScenarioError> {
    let mut doc = parse_doc(text, sets)?;
    let mut changed = !sets.is_empty();
    let mut absolute = |t: &mut toml::Table, key: &str| {
        if let Some(toml::Value::String(p)) = t.get_mut(key) {
            let full = crate::build::resolve(base_dir, p).to_string_lossy().into_owned();
            changed |= full != *p;
            *p = full;
        }
    };
    if let Some(toml::Value::Table(w)) = doc.get_mut("workload") {
        for key in ["flow_list", "cdf_file", "file"] {
            absolute(w, key);
        }
        if let Some(toml::Value::Array(classes)) = w.get_mut("classes") {
            classes.iter_mut().filter_map(toml::Value::as_table_mut).for_each(|c| absolute(c, "cdf_file"));
        }
    }
    if let Some(toml::Value::Table(t)) = doc.get_mut("topology") {
        absolute(t, "file");
    }
    if !changed {
        return Ok(text.to_string());
    }
    toml::to_string(&doc).map_err(|e| bad("", format!("cannot write the resolved scenario: {e}")))
}

impl Scenario {
    /// Parses scenario TOML text with overrides applied, and validates it.
    pub fn from_toml(text: &str, sets: &[String]) -> Result<Scenario, ScenarioError> {
        let doc = parse_doc(text, sets)?;
        let sc: Scenario = serde_path_to_error::deserialize(toml::Value::Table(doc)).map_err(|e| {
            // serde's path through the `[topology]` kinds loses the key:
            // checked against its kind's fields alone, the error names it
            // (checked only on failure: a large explicit topology's table
            // would otherwise be copied and read twice)
            if let Some(toml::Value::Table(t)) = parse_doc(text, sets).ok().and_then(|mut d| d.remove("topology")) {
                if let Err(e) = TopologyCfg::precheck(&t) {
                    return e;
                }
            }
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            bad(if path == "." { String::new() } else { path }, human(&inner))
        })?;
        sc.validate()?;
        Ok(sc)
    }

    /// What RDMA runs on: switch schemes, open-loop flows and jobs, no
    /// incast or UDP.
    fn check_rdma(&self) -> Result<(), ScenarioError> {
        const SWITCH_SCHEMES: &[&str] = &["ecmp", "spray", "drill", "letflow", "conga", "conga_flow"];
        if !SWITCH_SCHEMES.contains(&self.lb.scheme.as_str()) {
            return Err(bad(
                "lb.scheme",
                format!(
                    "{:?} does not run with transport.kind = \"rdma\": one of {} (schemes at the hosts' edge need TCP)",
                    self.lb.scheme,
                    SWITCH_SCHEMES.join(", ")
                ),
            ));
        }
        if self.workload.kind == WorkloadKind::Incast {
            return Err(bad("workload.kind", "transport.kind = \"rdma\" runs open-loop flows and [[jobs]]; the incast workload needs TCP"));
        }
        if !self.udp.is_empty() {
            return Err(bad("udp", "transport.kind = \"rdma\" has no UDP background sources"));
        }
        Ok(())
    }

    /// Checks what deserialising cannot, section by section in a fixed order:
    /// the first error found is the one reported.
    fn validate(&self) -> Result<(), ScenarioError> {
        self.topology.validate()?;
        self.check_memory()?;
        // lb.rtt_us comes between the network's buffer_pkts/buffer_bytes
        // conflict and its other checks, as it always has
        self.network.validate_buffer_choice()?;
        self.lb.validate()?;
        self.network.validate()?;
        // needs transport and network together; it followed transport.cc's
        // check, which it excludes (cc = "dctcp" passes that check), so
        // checking it just before reports the same first error
        if matches!(self.transport.cc, lbsim_tcp::CongestionControl::Dctcp { .. }) && self.network.ecn_k_pkts.is_none() && self.network.ecn_k_bytes.is_none() {
            return Err(bad("network.ecn_k_pkts", "DCTCP needs an ECN marking threshold (e.g. ecn_k_pkts = 20)"));
        }
        self.transport.validate()?;
        if self.transport.kind == TransportKind::Rdma {
            self.rdma.validate()?;
            self.check_rdma()?;
        }
        self.workload.validate()?;
        for (i, d) in self.drops.iter().enumerate() {
            d.validate(i)?;
        }
        for (i, f) in self.failures.iter().enumerate() {
            f.validate(i)?;
        }
        for (i, o) in self.link_overrides.iter().enumerate() {
            o.validate(i)?;
        }
        for (i, u) in self.udp.iter().enumerate() {
            u.validate(i)?;
        }
        for (i, j) in self.jobs.iter().enumerate() {
            j.validate(i)?;
        }
        if self.workload.kind == WorkloadKind::Collective && self.jobs.is_empty() {
            return Err(bad("workload.kind", "\"collective\" runs the [[jobs]] alone: give at least one [[jobs]] entry"));
        }
        self.metrics.validate()?;
        self.run.validate()
    }
}

impl NetworkCfg {
    /// Checks that at most one of buffer_pkts and buffer_bytes is given.
    fn validate_buffer_choice(&self) -> Result<(), ScenarioError> {
        if self.buffer_pkts.is_some() && self.buffer_bytes.is_some() {
            return Err(bad("network.buffer_bytes", "give buffer_pkts or buffer_bytes, not both"));
        }
        Ok(())
    }

    /// Checks the ECN, host NIC, jitter and buffer settings (after `validate_buffer_choice`).
    fn validate(&self) -> Result<(), ScenarioError> {
        if self.ecn_k_pkts.is_some() && self.ecn_k_bytes.is_some() {
            return Err(bad("network.ecn_k_bytes", "give ecn_k_pkts or ecn_k_bytes, not both"));
        }
        if let Some(j) = self.host_jitter_ns {
            SimTime::input(j, 1e3, "ns", false).map_err(|m| bad("network.host_jitter_ns", m))?;
            if j > 1e9 {
                return Err(bad(
                    "network.host_jitter_ns",
                    format!(
                        "{} ns is more than a second of jitter per packet: no flow would complete in a sensible time (1000 = 1 us is the default)",
                        lbsim_engine::fmt_num(j)
                    ),
                ));
            }
        }
        if self.buffer_pkts == Some(0) {
            return Err(bad("network.buffer_pkts", "must be >= 1"));
        }
        Ok(())
    }
}

impl LbCfg {
    /// Checks the RTT the scheme's parameters are denominated in.
    fn validate(&self) -> Result<(), ScenarioError> {
        if let Some(r) = self.rtt_us {
            dur_us("lb.rtt_us", r, true)?;
        }
        Ok(())
    }
}

impl WorkloadCfg {
    /// Checks the workload's kind and the settings that kind uses.
    fn validate(&self) -> Result<(), ScenarioError> {
        dur_us("workload.start_gap_us", self.start_gap_us, false)?;
        if self.start_gap_us > 0.0 && self.kind != WorkloadKind::PerSender {
            return Err(bad("workload.start_gap_us", "applies to workload.kind = \"per_sender\" only (poisson gaps follow from the load)"));
        }
        if !self.pods.is_empty() && !matches!(self.pattern, PatternKind::RandomInterPod | PatternKind::BijectionInterPod) {
            return Err(bad(
                "workload.pods",
                "applies to the inter-pod patterns (random_inter_pod, bijection_inter_pod); use src_racks/dst_racks with inter_rack",
            ));
        }
        if self.kind == WorkloadKind::PerSender && self.size_bytes == Some(0) {
            return Err(bad("workload.size_bytes", "must be at least 1 byte"));
        }
        if self.kind == WorkloadKind::Poisson {
            self.validate_poisson()?;
        }
        if !self.kind.generated() {
            for (f, set) in
                [("workload.pareto", self.pareto.is_some()), ("workload.classes", !self.classes.is_empty()), ("workload.rate_per_s", self.rate_per_s.is_some())]
            {
                if set {
                    return Err(bad(f, format!("applies to workload.kind = \"poisson\" or \"per_sender\", not {:?}", word_of(self.kind))));
                }
            }
        }
        if self.kind.generated() {
            if let Some(r) = self.rate_per_s {
                self.validate_rate_per_s(r)?;
            }
            if !self.classes.is_empty() {
                self.validate_classes()?;
            }
            if let Some(p) = &self.pareto {
                if self.size_bytes.is_some() || self.cdf_file.is_some() {
                    return Err(bad("workload.pareto", "give one size distribution: pareto, size_bytes or cdf_file"));
                }
                p.build("workload.pareto")?;
            }
        }
        if self.kind == WorkloadKind::Hpcc && self.file.is_none() {
            return Err(bad("workload.file", "required when workload.kind = \"hpcc\""));
        }
        if self.kind == WorkloadKind::FlowList && self.flow_list.is_none() {
            return Err(bad("workload.flow_list", "required when workload.kind = \"flow_list\""));
        }
        if self.kind == WorkloadKind::Incast {
            if self.incast.fan_in == 0 {
                return Err(bad("workload.incast.fan_in", "must be >= 1"));
            }
            if self.incast.request_bytes == 0 {
                return Err(bad("workload.incast.request_bytes", "must be >= 1"));
            }
        }
        dur_us("workload.start_us", self.start_us, false)?;
        Ok(())
    }

    /// Checks the load, capacity, flow count and sizes of a poisson workload.
    fn validate_poisson(&self) -> Result<(), ScenarioError> {
        pos("workload.load", self.load)?;
        if self.load < 1e-4 {
            return Err(bad(
                "workload.load",
                format!("{} is below the smallest load run (0.0001): flows would start days apart", lbsim_engine::fmt_num(self.load)),
            ));
        }
        if self.load >= 1.0 && !self.allow_overload {
            return Err(bad(
                "workload.load",
                format!(
                    "{} is {}x the capacity of {}: the load is a fraction of that capacity, above 0 and below 1 (60 % is 0.6); \
                     to overload it on purpose set workload.allow_overload = true",
                    lbsim_engine::fmt_num(self.load),
                    lbsim_engine::fmt_num(self.load),
                    word_of(self.load_of)
                ),
            ));
        }
        if let Some(c) = self.capacity_gbps {
            rate("workload.capacity_gbps", c)?;
        }
        if self.flows == 0 {
            return Err(bad("workload.flows", "must be >= 1"));
        }
        if self.size_bytes == Some(0) {
            return Err(bad("workload.size_bytes", "must be at least 1 byte"));
        }
        unit_bytes("workload.cdf_unit_bytes", self.cdf_unit_bytes)?;
        Ok(())
    }

    /// Checks `rate_per_s` (given as `r`): poisson only, positive, and arrivals that fit the clock.
    fn validate_rate_per_s(&self, r: f64) -> Result<(), ScenarioError> {
        if self.kind != WorkloadKind::Poisson {
            return Err(bad("workload.rate_per_s", "applies to workload.kind = \"poisson\" only"));
        }
        if !(r.is_finite() && r > 0.0) {
            return Err(bad("workload.rate_per_s", format!("must be a number of flows per second > 0, got {}", lbsim_engine::fmt_num(r))));
        }
        // the arrivals must fit the clock (and a run a user waits for)
        let span_s = self.flows as f64 / r;
        if span_s > 1e6 {
            return Err(bad(
                "workload.rate_per_s",
                format!(
                    "{} flows at {} per second span {} s of simulated time (at most 1e6 s)",
                    self.flows,
                    lbsim_engine::fmt_num(r),
                    lbsim_engine::fmt_num(span_s)
                ),
            ));
        }
        Ok(())
    }

    /// Checks a non-empty list of traffic classes and that their fractions sum to 1.
    fn validate_classes(&self) -> Result<(), ScenarioError> {
        if self.size_bytes.is_some() || self.pareto.is_some() || self.cdf_file.is_some() {
            return Err(bad("workload.classes", "give sizes per class: workload.size_bytes, pareto and cdf_file apply without classes"));
        }
        if self.classes.len() > 255 {
            return Err(bad("workload.classes", format!("at most 255 classes, got {}", self.classes.len())));
        }
        let mut sum = 0.0;
        for (i, c) in self.classes.iter().enumerate() {
            let f = format!("workload.classes[{i}]");
            if c.name.trim().is_empty() {
                return Err(bad(format!("{f}.name"), "must not be empty"));
            }
            if self.classes[..i].iter().any(|o| o.name == c.name) {
                return Err(bad(format!("{f}.name"), format!("{:?} names two classes", c.name)));
            }
            if !(c.fraction.is_finite() && c.fraction > 0.0 && c.fraction <= 1.0) {
                return Err(bad(format!("{f}.fraction"), format!("must be in (0, 1], got {}", lbsim_engine::fmt_num(c.fraction))));
            }
            sum += c.fraction;
            let given = [c.size_bytes.is_some(), c.pareto.is_some(), c.cdf.is_some(), c.cdf_file.is_some()].iter().filter(|&&b| b).count();
            if given != 1 {
                return Err(bad(f.to_string(), "give exactly one of size_bytes, pareto, cdf, cdf_file"));
            }
            if c.cdf_unit_bytes.is_some() && c.cdf.is_none() && c.cdf_file.is_none() {
                return Err(bad(format!("{f}.cdf_unit_bytes"), "applies to a class's cdf or cdf_file only"));
            }
            if c.size_bytes == Some(0) {
                return Err(bad(format!("{f}.size_bytes"), "must be at least 1 byte"));
            }
            unit_bytes(&format!("{f}.cdf_unit_bytes"), c.cdf_unit_bytes)?;
            if let Some(p) = &c.pareto {
                p.build(&format!("{f}.pareto"))?;
            }
        }
        if (sum - 1.0).abs() > 1e-6 {
            return Err(bad("workload.classes", format!("the fractions sum to {}, not 1", lbsim_engine::fmt_num(sum))));
        }
        Ok(())
    }
}

impl DropCfg {
    /// Checks the drop's time and count (`i`: its index in `drops`).
    fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        dur_ms(&format!("drops[{i}].at_ms"), self.at_ms, false)?;
        if self.count == 0 {
            return Err(bad(format!("drops[{i}].count"), "must be at least 1"));
        }
        Ok(())
    }
}

impl FailureCfg {
    /// Checks the failure's down and restore times (`i`: its index in `failures`).
    fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        dur_ms(&format!("failures[{i}].at_ms"), self.at_ms, false)?;
        if let Some(r) = self.restore_ms {
            dur_ms(&format!("failures[{i}].restore_ms"), r, false)?;
            if r <= self.at_ms {
                return Err(bad(format!("failures[{i}].restore_ms"), "must be after at_ms"));
            }
        }
        Ok(())
    }
}

impl LinkOverrideCfg {
    /// Checks the override's rate and delay (`i`: its index in `link_overrides`).
    fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        if let Some(r) = self.rate_gbps {
            rate(&format!("link_overrides[{i}].rate_gbps"), r)?;
        }
        if let Some(d) = self.delay_us {
            dur_us(&format!("link_overrides[{i}].delay_us"), d, false)?;
        }
        Ok(())
    }
}

impl UdpCfg {
    /// Checks the UDP source's rate, times, ends and packet size (`i`: its index in `udp`).
    fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        rate(&format!("udp[{i}].rate_gbps"), self.rate_gbps)?;
        dur_ms(&format!("udp[{i}].start_ms"), self.start_ms, false)?;
        if let Some(stop) = self.stop_ms {
            dur_ms(&format!("udp[{i}].stop_ms"), stop, true)?;
            if stop <= self.start_ms {
                return Err(bad(format!("udp[{i}].stop_ms"), format!("{stop} ms is not after start_ms ({} ms)", self.start_ms)));
            }
        }
        if self.src == self.dst {
            return Err(bad(format!("udp[{i}].dst"), format!("host {} would send to itself", self.src)));
        }
        if self.packet_bytes < 64 {
            return Err(bad(format!("udp[{i}].packet_bytes"), "must be >= 64"));
        }
        Ok(())
    }
}

impl MetricsCfg {
    /// Checks the samplers' intervals, the capture limit, the percentiles and the size buckets.
    fn validate(&self) -> Result<(), ScenarioError> {
        dur_ms("metrics.utilization_window_ms", self.utilization_window_ms, true)?;
        if self.cwnd_sample_interval_us != 0.0 {
            dur_us("metrics.cwnd_sample_interval_us", self.cwnd_sample_interval_us, true)?;
        }
        if self.scheme_sample_interval_us != 0.0 {
            dur_us("metrics.scheme_sample_interval_us", self.scheme_sample_interval_us, true)?;
        }
        if self.pcap_max_packets > 5_000_000 {
            return Err(bad("metrics.pcap_max_packets", "at most 5,000,000 (each captured packet is kept in memory until the run ends)"));
        }
        if self.flow_rate_window_ms != 0.0 {
            dur_ms("metrics.flow_rate_window_ms", self.flow_rate_window_ms, true)?;
        }
        dur_us("metrics.queue_sample_interval_us", self.queue_sample_interval_us, true)?;
        for (i, g) in self.flowlet_gaps_us.iter().enumerate() {
            dur_us(&format!("metrics.flowlet_gaps_us[{i}]"), *g, true)?;
        }
        if let Some(q) = self.percentiles.iter().find(|q| !(q.is_finite() && **q > 0.0 && **q < 100.0)) {
            return Err(bad("metrics.percentiles", format!("each must be a percent strictly between 0 and 100, got {}", lbsim_engine::fmt_num(*q))));
        }
        if self.size_buckets_bytes.windows(2).any(|w| w[1] <= w[0]) {
            return Err(bad("metrics.size_buckets_bytes", "must be strictly increasing"));
        }
        Ok(())
    }
}

impl RunCfg {
    /// Checks the stop times.
    fn validate(&self) -> Result<(), ScenarioError> {
        if let Some(s) = self.stop_ms {
            dur_ms("run.stop_ms", s, true)?;
        }
        dur_ms("run.stop_after_last_start_ms", self.stop_after_last_start_ms, true)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate_gbps = 10
fabric_rate_gbps = 40
"#;

    fn err_of(text: &str, sets: &[&str]) -> ScenarioError {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_toml(text, &sets).unwrap_err()
    }

    #[test]
    fn minimal_scenario_gets_defaults() {
        let s = Scenario::from_toml(MIN, &[]).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.transport.mss_bytes, 1448);
        assert_eq!(s.lb.scheme, "ecmp");
        let t = s.build_topology().unwrap();
        assert_eq!(t.num_hosts(), 8);
    }

    #[test]
    fn unknown_key_names_the_key() {
        let e = err_of(&format!("{MIN}\n[transport]\nmin_rto = 5\n"), &[]);
        assert!(e.to_string().contains("min_rto"), "{e}");
        assert!(e.field.starts_with("transport"), "{e:?}");
        let e = err_of(&MIN.replace("spines = 2", "spines = 2\nspine_rate = 3"), &[]);
        assert!(e.to_string().contains("spine_rate"), "{e}");
    }

    #[test]
    fn negative_rate_names_the_field() {
        let e = err_of(MIN, &["topology.host_rate_gbps=-1"]);
        assert_eq!(e.field, "topology.host_rate_gbps");
        assert!(e.msg.contains("positive rate"), "{}", e.msg);
    }

    #[test]
    fn overload_is_refused_without_the_override() {
        let e = err_of(MIN, &["workload.load=1.2"]);
        assert_eq!(e.field, "workload.load");
        // a percentage written as a number is read as a fraction: said so
        let e = err_of(MIN, &["workload.load=60"]);
        assert_eq!(e.field, "workload.load");
        assert!(e.msg.starts_with("60 is 60x the capacity of ") && e.msg.contains("a fraction of that capacity") && e.msg.contains("60 % is 0.6"), "{}", e.msg);
        assert!(!e.msg.contains('\n'));
        assert!(Scenario::from_toml(MIN, &["workload.load=1.2".into(), "workload.allow_overload=true".into()]).is_ok());
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = err_of(MIN, &["transport.sack=\"yes\""]);
        assert!(e.field.contains("sack"), "{e:?}");
    }

    #[test]
    fn overrides_parse_toml_values_and_bare_strings() {
        let s = Scenario::from_toml(MIN, &["lb.scheme=spray".into(), "workload.src_racks=[0]".into(), "seed=7".into()]).unwrap();
        assert_eq!(s.lb.scheme, "spray");
        assert_eq!(s.workload.src_racks, vec![0]);
        assert_eq!(s.seed, 7);
    }

    #[test]
    fn the_resolved_toml_applies_the_overrides_and_joins_files_to_the_base() {
        let text = format!("{MIN}\n[workload]\nkind = \"flow_list\"\nflow_list = \"flows.csv\"\n");
        let sets = vec!["seed=7".to_string(), "lb.scheme=spray".to_string()];
        let r = resolved_toml(&text, &sets, Some(std::path::Path::new("base"))).unwrap();
        let again = Scenario::from_toml(&r, &[]).unwrap();
        assert_eq!((again.seed, again.lb.scheme.as_str()), (7, "spray"));
        let direct = format!("{:?}", Scenario::from_toml(&text, &sets).unwrap());
        let joined = std::path::Path::new("base").join("flows.csv");
        assert_eq!(format!("{again:?}"), direct.replace("\"flows.csv\"", &format!("{:?}", joined.to_str().unwrap())));
        // nothing to change: the text itself, comments kept
        let plain = format!("# mine\n{MIN}");
        assert_eq!(resolved_toml(&plain, &[], Some(std::path::Path::new("base"))).unwrap(), plain);
    }

    #[test]
    fn dctcp_requires_a_marking_threshold() {
        let e = err_of(MIN, &["transport.cc=dctcp"]);
        assert_eq!(e.field, "network.ecn_k_pkts");
    }

    #[test]
    fn a_fabric_too_large_is_refused_naming_its_size_key_and_memory() {
        let ft = "[topology]\nkind = \"fat_tree\"\nk = 200\nhost_rate_gbps = 10\nfabric_rate_gbps = 10\n";
        let e = Scenario::from_toml(ft, &[]).unwrap_err();
        assert_eq!(e.field, "topology.k");
        assert!(e.msg.contains("2000000 hosts") && e.msg.contains("GB"), "{}", e.msg);
        let e = err_of(MIN, &["topology.leaves=100000"]);
        assert_eq!(e.field, "topology.leaves");
        let e = err_of(MIN, &["topology.hosts_per_leaf=[600000, 600000]"]);
        assert_eq!(e.field, "topology.hosts_per_leaf", "the largest count is blamed");
        let e = Scenario::from_toml(&ft.replace("k = 200", "k = 4194304"), &[]).unwrap_err();
        assert_eq!(e.field, "topology.k", "no overflow: {}", e.msg);
        // a k = 24 fat-tree (3,456 hosts) is fine
        assert!(Scenario::from_toml(&ft.replace("k = 200", "k = 24"), &[]).is_ok());
        // a fabric whose routing fits but whose scheme's per-leaf-pair
        // tables do not (AG: 8,000^2 leaf pairs x 2,000 uplinks, ~10 TB);
        // ECMP on the same fabric is accepted
        let big = ["topology.leaves=8000", "topology.spines=2000", "topology.hosts_per_leaf=1"];
        let e = err_of(MIN, &[&big[..], &["lb.scheme=\"ag\""]].concat());
        assert_eq!(e.field, "topology.leaves");
        assert!(e.msg.contains("of ag's per-leaf-pair and train tables") && e.msg.contains("GB"), "{}", e.msg);
        assert!(Scenario::from_toml(MIN, &big.iter().map(|x| x.to_string()).collect::<Vec<_>>()).is_ok());
        let none = |_: &str| None;
        assert!(lbsim_lb::fabric_table_bytes("ag", 8000, 18000, 8000, 2000, none) > 10_000_000_000_000);
        assert_eq!(lbsim_lb::fabric_table_bytes("ecmp", 8000, 18000, 8000, 2000, none), 0);
        // a direct-mapped PST of 4M slots at each of 12,000 switches (10,000
        // leaves, 2,000 spines: ~1.2 TB) is refused; the exact default, and
        // a size the scheme itself refuses, are not counted
        let ps = ["topology.leaves=10000", "topology.spines=2000", "topology.hosts_per_leaf=1", "lb.scheme=\"expeditus\""];
        let e = err_of(MIN, &[&ps[..], &["lb.params.pst_entries=4194304"]].concat());
        assert!(e.field == "topology.leaves" && e.msg.contains("of expeditus's path-selection tables, lb.params.pst_entries"), "{}: {}", e.field, e.msg);
        assert!(Scenario::from_toml(MIN, &[&ps[..], &["lb.params.pst_entries=1e12"]].concat().iter().map(|x| x.to_string()).collect::<Vec<_>>()).is_ok());
        let small = Scenario::from_toml(MIN, &["lb.scheme=\"expeditus\"".to_string(), "lb.params.pst_entries=1e12".to_string()]).unwrap();
        match crate::validate(&small, None) {
            Err(crate::SimError::Scenario(e)) => assert_eq!(e.field, "lb.params.pst_entries", "{}", e.msg),
            _ => panic!("a PST of 1e12 slots is refused by the scheme"),
        }
        let pst = |x: f64| move |k: &str| (k == "pst_entries").then_some(x);
        assert_eq!(lbsim_lb::fabric_table_bytes("expeditus", 10, 30, 2, 2, pst(65536.0)), 20 * 65536 * lbsim_lb::pst::SLOT_BYTES as u64);
        assert_eq!(lbsim_lb::fabric_table_bytes("expeditus", 10, 30, 2, 2, pst(0.5)), 0);
        // an explicit topology's racks are the switches hosts link to (2,
        // not one per host), their uplinks the largest such degree (ta: 2
        // hosts + 3 paths)
        let ex = Scenario::from_toml(include_str!("../../../examples/explicit_asymmetric.toml"), &[]).unwrap();
        assert_eq!(ex.topology.size(), (4, 9, 2, 5));
    }
}
