//! # lbsim-tcp
//!
//! TCP as I/O-free state machines (the smoltcp style): [`TcpSender`] and
//! [`TcpReceiver`] take segments and timer expiries and emit segments into a
//! caller-supplied `Vec`; they never see packets, links or an event queue.
//! Each connection carries data in one direction, from the sender to the
//! receiver, which is what every load-balancing experiment needs; ACKs
//! carry no data.
//!
//! Standards followed (section references in the code): RFC 793 states,
//! RFC 5681 congestion control with RFC 3465 byte counting, RFC 6582
//! NewReno, RFC 2018 SACK, RFC 6675 SACK loss recovery, RFC 6937 PRR,
//! RFC 6298 RTO, RFC 7323 timestamps, RFC 3168 ECN, RFC 8257 DCTCP,
//! RFC 6356 LIA (MPTCP coupled increase), RFC 7661 (no growth while
//! application-limited). Optional Linux behaviours: restart after idle
//! (RFC 5681 §4.1), D-SACK (RFC 2883), an adaptive duplicate-ACK threshold
//! (RFC 4653/5827, Linux `tp->reordering`) with undo of spurious reductions
//! (RFC 3708, RFC 3522 Eifel detection, RFC 4015 response).

pub mod config;
pub mod congestion;
pub mod header;
pub mod ranges;
pub mod receiver;
pub mod rtt;
pub mod sender;

pub use config::{
    CongestionControl, CwndGrowth, FrSsthresh, LostRetransmission, PartialAckTimer, PrrBound, Recover, RecoveryExit, Reordering, RtoSsthresh, TcpConfig,
};
pub use congestion::{lia_alpha, Congestion};
pub use header::TcpHeader;
pub use ranges::RangeSet;
pub use receiver::{ReceiverState, TcpReceiver};
pub use sender::{Recovery, SenderState, SenderStats, TcpSender};

#[cfg(test)]
mod tests;
