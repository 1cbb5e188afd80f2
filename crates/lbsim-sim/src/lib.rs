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

mod build;
pub mod columns;
pub mod explain;
pub mod hpcc;
pub mod metrics;
pub mod provenance;
mod resolve;
mod run;
pub mod scenario;
mod summary;
mod world;

/// Bumped whenever a change alters simulation results for an unchanged
/// scenario; results catalogs key their runs on it (with the scenario), so
/// stale results are never reused.
pub const MODEL_REVISION: &str = "2026-11-26.1";

/// The model revision that results of `scheme` depend on: [`MODEL_REVISION`]
/// plus the scheme's own revision when it has one
/// ([`lbsim_lb::SchemeInfo::revision`]), e.g. `2026-11-22.2+clove_int.1`.
pub fn model_revision(scheme: &str) -> String {
    match lbsim_lb::scheme_info(scheme).filter(|s| s.revision > 0) {
        Some(s) => format!("{MODEL_REVISION}+{}.{}", s.name, s.revision),
        None => MODEL_REVISION.to_string(),
    }
}

pub use build::{flow_list, place_jobs, prepare, random_failures, Prepared};
pub use explain::{explain, scheme_notes, too_long};
pub use metrics::{Counters, FlowRecord, LinkSample, QueueSample};
pub use run::{run, run_with, validate, RunOptions};
pub use scenario::{resolved_toml, Scenario, ScenarioError};

use lbsim_engine::SimTime;
use serde_json::Value;

/// What a run produces.
pub struct RunOutput {
    pub flows: Vec<FlowRecord>,
    /// Collective jobs: one record per job and iteration started, and per
    /// job, iteration and step.
    pub jobs: Vec<metrics::JobRecord>,
    pub steps: Vec<metrics::StepRecord>,
    pub link_samples: Vec<LinkSample>,
    pub queue_samples: Vec<QueueSample>,
    pub flow_rates: Vec<FlowRate>,
    pub flow_rate_window: Option<SimTime>,
    /// The link samplers' window.
    pub link_window: SimTime,
    /// Packets captured on `metrics.pcap_ports`.
    pub pcap: Vec<metrics::CapturedPacket>,
    pub cwnd_samples: Vec<CwndSample>,
    /// RDMA: queue-pair rate samples (`metrics.cwnd_sample_interval_us`).
    pub qp_rates: Vec<QpRateSample>,
    /// Scheme state samples (`metrics.scheme_sample_interval_us`).
    pub scheme_samples: Vec<lbsim_lb::SchemeSample>,
    /// Every egress port's totals, indexed by `PortId`.
    pub ports: Vec<PortReport>,
    /// Each size class's name, by index (`workload.classes`; empty without).
    pub class_names: Vec<String>,
    /// Whether the run recorded paths (`metrics.path_record`): without,
    /// the flows' path columns are null.
    pub path_record: bool,
    /// Whether the hosts ran RDMA (`transport.kind = "rdma"`): without,
    /// the flows' RDMA columns are null.
    pub rdma: bool,
    /// RDMA: the completed flows in the HPCC simulator's FCT format (one
    /// line per flow in completion order; docs/rdma.md), written as fct.txt.
    pub fct_txt: String,
    pub summary: Value,
}

/// Receive-side goodput per flow and window (`metrics.flow_rate_window_ms`):
/// (window end, flow, bytes newly in order; flow `u32::MAX` for UDP).
pub type FlowRate = (SimTime, u32, u64);

/// An RDMA queue pair's rates at a sample time.
#[derive(Clone, Copy, Debug)]
pub struct QpRateSample {
    pub t: SimTime,
    pub flow: u32,
    /// The rate the NIC paces it at (DCQCN's Rc) and DCQCN's target Rt.
    pub rate: lbsim_engine::BitsPerSec,
    pub target: lbsim_engine::BitsPerSec,
    /// Bytes sent and not yet acknowledged.
    pub in_flight: u64,
}

/// A congestion-window sample (`metrics.cwnd_sample_interval_us`): (time,
/// flow id, connection, cwnd bytes, ssthresh bytes).
pub type CwndSample = (SimTime, u32, u32, u64, u64);

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

#[cfg(test)]
mod tests;
