//! # lbsim-rdma
//!
//! RDMA over Converged Ethernet (RoCEv2, InfiniBand Architecture
//! Specification Annex A17) as I/O-free state machines, beside lbsim-tcp
//! and in its style: a [`QpSender`] and a [`QpReceiver`] take packets and
//! timer expiries and say what to send; they never see links, ports or an
//! event queue. The World wires them to the NICs (`lbsim-sim`,
//! `world/rdma.rs`); the lossless fabric they run on (PFC, IEEE 802.1Qbb)
//! is `lbsim_net::pfc`.
//!
//! - [`qp`]: the reliable connection: byte sequence numbers, one payload
//!   per packet, an ACK per packet, NACK on a gap and go-back-N at the
//!   sender (HPCC simulator `rdma-hw.cc`, ConnectX NICs), pacing at the
//!   current rate, an optional window of one BDP, a retransmission timeout.
//! - [`dctcp`]: DCTCP's control law driving the rate instead of a window
//!   (the HPCC simulator's DCTCP mode);
//! - [`dcqcn`]: DCQCN's reaction point as ConnectX implements it (and as
//!   the HPCC simulator's `*Mlx` functions model it), with the paper's
//!   variant as an option; its timers are evaluated lazily, so a flow costs
//!   events only when its rate changes.
//!
//! Every rate is integer bit/s and every time integer picoseconds
//! (`lbsim_engine`); a rate product truncates, as the reference does.

pub mod config;
pub mod dcqcn;
pub mod dctcp;
pub mod qp;

pub use config::{DcqcnConfig, RateControl, RdmaConfig};
pub use dcqcn::Dcqcn;
pub use dctcp::{DctcpRate, DctcpRateConfig};
pub use qp::{AckKind, QpReceiver, QpSender, QpStats, Reply};
