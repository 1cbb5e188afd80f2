//! # lbsim-workload
//!
//! Traffic generation, independent of the network model:
//! - [`cdf`]: the standard empirical flow-size CDFs of the load-balancing
//!   literature (web search, data mining, enterprise, ...), shipped with their
//!   provenance, sampled with linear interpolation;
//! - [`traffic`]: Poisson arrivals, traffic patterns (inter-rack,
//!   all-to-all, stride, bijection, random inter-pod) and flow-list CSV files
//!   that let different schemes — and other simulators — replay identical
//!   traffic.
//!
//! - [`collective`]: collective operations (all-reduce, all-gather,
//!   reduce-scatter, all-to-all) as their exact step structure.
//!
//! Closed-loop traffic (incast, the steps of a collective) is driven by the
//! simulator itself.

pub mod cdf;
pub mod collective;
pub mod sizes;
pub mod traffic;

pub use cdf::{Cdf, CdfFormat};
pub use collective::{CollOp, Send, COLL_OPS};
pub use sizes::{FlowSizes, Pareto, SizeClass, SizeDist};
pub use traffic::{per_sender_flows, poisson_flows, read_flow_list, write_flow_list, FlowSpec, HostLayout, PairSampler, Pattern};
