//! Transport parameters, with defaults of a datacenter Linux-like stack.
//!
//! The defaults keep the classic behaviour (fixed duplicate-ACK threshold,
//! no restart after idle, no D-SACK). A Linux host of the CONGA/Clove
//! testbeds is closer to `reordering: Reordering::LINUX`, `dsack: true`,
//! `restart_after_idle: true`: the scenario layer chooses.
//!
//! The enums are the scenario's words themselves: each reads and writes as
//! the snake_case name of its variant (`transport.rto_ssthresh = "pipe"`),
//! so the scenario layer holds them directly and a word has one spelling.

use lbsim_engine::SimTime;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Congestion control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CongestionControl {
    /// NewReno (RFC 5681 + RFC 6582); with `sack`, loss recovery follows
    /// RFC 6675 with Proportional Rate Reduction (RFC 6937).
    NewReno,
    /// DCTCP (RFC 8257): ECN-fraction window cut, `g` the EWMA gain.
    Dctcp { g: f64 },
}

impl CongestionControl {
    /// DCTCP's gain for the marked-fraction average (RFC 8257 §4.2 and
    /// Alizadeh et al. 2010 use 1/16).
    pub const DCTCP_G: f64 = 1.0 / 16.0;
}

/// The scenario word of a [`CongestionControl`] (`transport.cc`); DCTCP's
/// gain is a setting of its own, so the word alone reads as `DCTCP_G`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CcWord {
    #[serde(rename = "newreno")]
    NewReno,
    Dctcp,
}

impl Serialize for CongestionControl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CongestionControl::NewReno => CcWord::NewReno,
            CongestionControl::Dctcp { .. } => CcWord::Dctcp,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CongestionControl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match CcWord::deserialize(d)? {
            CcWord::NewReno => CongestionControl::NewReno,
            CcWord::Dctcp => CongestionControl::Dctcp { g: CongestionControl::DCTCP_G },
        })
    }
}

/// How the sender's duplicate-ACK threshold (DupThresh) evolves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reordering {
    /// DupThresh stays `dupack_threshold` (RFC 5681 §3.2, RFC 6675 §2).
    #[default]
    Fixed,
    /// Linux before RACK: DupThresh starts at `dupack_threshold` and rises
    /// to the reordering degree measured from SACK information (RFC 4653,
    /// RFC 5827 discuss this), capped at `max_pkts` (Linux
    /// `tcp_max_reordering` = 300); spurious reductions are undone on D-SACK
    /// (RFC 3708 detection, RFC 4015 response) or timestamp (RFC 3522 Eifel)
    /// evidence.
    Adaptive { max_pkts: u32 },
}

impl Reordering {
    /// Linux's default (`tcp_max_reordering` = 300).
    pub const LINUX: Reordering = Reordering::Adaptive { max_pkts: 300 };
}

/// The scenario word of a [`Reordering`] (`transport.reordering`):
/// "fixed", or "linux" for [`Reordering::LINUX`].
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReorderingWord {
    Fixed,
    Linux,
}

impl Serialize for Reordering {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reordering::Fixed => ReorderingWord::Fixed,
            Reordering::Adaptive { .. } => ReorderingWord::Linux,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Reordering {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match ReorderingWord::deserialize(d)? {
            ReorderingWord::Fixed => Reordering::Fixed,
            ReorderingWord::Linux => Reordering::LINUX,
        })
    }
}

/// How the window grows per ACK of new data (`TcpConfig::byte_counting`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CwndGrowth {
    /// RFC 3465 appropriate byte counting (L = 2), Linux-like: growth
    /// follows the bytes acknowledged.
    Bytes,
    /// RFC 5681 §3.1 as written (ns-2/ns-3): at most one MSS per ACK in slow
    /// start, MSS²/cwnd in congestion avoidance.
    PerAck,
}

impl CwndGrowth {
    /// The growth a `byte_counting` flag selects.
    pub fn of(byte_counting: bool) -> CwndGrowth {
        if byte_counting {
            CwndGrowth::Bytes
        } else {
            CwndGrowth::PerAck
        }
    }

    /// Whether this growth counts bytes (the `TcpConfig::byte_counting` flag).
    pub fn byte_counting(self) -> bool {
        self == CwndGrowth::Bytes
    }
}

/// The window a retransmission timeout halves into ssthresh.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoSsthresh {
    /// RFC 5681 §3.1 eq. (4): FlightSize / 2 (bytes sent and not
    /// cumulatively acknowledged), held on a repeated timeout of the same
    /// episode ("the value of ssthresh is held constant").
    #[default]
    FlightSize,
    /// ns-3 (`TcpSocketBase::ReTxTimeout`, 3.44): the RFC 6675 pipe just
    /// before the timeout (SACKed and lost-marked bytes excluded) / 2,
    /// recomputed on every timeout. After a failed recovery the pipe is far
    /// below FlightSize, so the restart is gentler.
    Pipe,
    /// htsim (`TcpSrc`): cwnd / 2 on every timeout, repeated ones included;
    /// during fast recovery, of min(ssthresh, FlightSize + MSS).
    Cwnd,
}

/// The window fast-recovery entry halves into ssthresh (NewReno).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrSsthresh {
    /// RFC 5681 §3.2 step 2, eq. (4): FlightSize / 2.
    #[default]
    FlightSize,
    /// cwnd / 2 (RFC 2001's rule; htsim's `TcpSrc`). Differs from
    /// FlightSize / 2 when the window is not full.
    Cwnd,
    /// ns-3 3.44 (`EnterRecovery`): the RFC 6675 pipe at entry / 2, SACKed
    /// and lost bytes excluded (the first segment at least counts as
    /// lost); with SACK, PRR's RecoverFS is that pipe too. Below
    /// FlightSize / 2 by half the data SACKed or lost at entry.
    Pipe,
}

/// cwnd when a full ACK ends NewReno fast recovery (RFC 6582 §3.2 step 3
/// offers both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryExit {
    /// Option 2: cwnd = ssthresh (ns-3); a sender with little in flight
    /// then sends up to ssthresh back to back.
    #[default]
    Ssthresh,
    /// Option 1: cwnd = min(ssthresh, max(FlightSize, MSS) + MSS), then slow
    /// start up to ssthresh (htsim): no burst.
    FlightSize,
}

/// What `recover` records at fast-recovery entry and at a timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recover {
    /// RFC 6582 §3.2 step 2 / §4.1: the highest sequence number transmitted
    /// (snd.max). Duplicate ACKs drawn by the copies of a go-back-N pass
    /// start no fast retransmit until snd.una passes all of it.
    #[default]
    SndMax,
    /// htsim (`TcpSrc::_highest_sent`, which serves as both snd.nxt and
    /// snd.max): the next byte to send. After a timeout snd.nxt falls back
    /// to snd.una, so a repeated timeout, or a fast retransmit during the
    /// go-back-N pass, records a lower `recover`: short recoveries repeat
    /// while the copies of earlier transmissions arrive.
    SndNxt,
}

/// PRR's bound once the pipe is at or below ssthresh (RFC 6937 §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrrBound {
    /// Slow-start reduction bound: up to one MSS more than delivered per ACK
    /// (RFC 6937's recommendation; Linux when snd_una advances).
    #[default]
    Ssrb,
    /// Conservative reduction bound: never more than delivered (ns-3 3.44's
    /// default bound; its `TcpPrrRecovery` also adds an MSS on an ACK of a
    /// retransmission and counts a duplicate ACK as one segment more
    /// delivered, which this does not model: docs/fidelity.md).
    Crb,
}

/// What becomes of a retransmission that is lost again (SACK recovery).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LostRetransmission {
    /// Found from SACKs: once more than (DupThresh − 1)·MSS of data sent
    /// after it is SACKed, it is resent without a timeout (Linux
    /// `tcp_mark_lost_retrans`, RACK), in fast recovery and in the
    /// go-back-N pass after a timeout (RFC 6675 §5.1).
    #[default]
    Sack,
    /// Left to the retransmission timer (ns-3 3.44: NextSeg never returns a
    /// segment already retransmitted; only `ReTxTimeout` clears the marks).
    Timeout,
}

/// Which ACKs of new data restart the retransmission timer during fast
/// recovery (RFC 6582 §4.2 names the two variants).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialAckTimer {
    /// Every ACK of new data (RFC 6298 (5.3); Linux).
    #[default]
    SlowButSteady,
    /// Only the first partial ACK of a recovery (RFC 6582's recommendation;
    /// ns-3 3.44 with and without SACK): a recovery that outlasts one RTO
    /// after it ends in a timeout.
    Impatient,
}

#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per full segment.
    pub mss: u32,
    /// Bytes of IP + TCP header (incl. the 12-byte timestamp option) per segment.
    pub header_bytes: u32,
    /// Initial congestion window, segments (RFC 6928 uses 10).
    pub init_cwnd_pkts: u32,
    /// Initial slow-start threshold, bytes (RFC 5681 §3.1: "arbitrarily
    /// high", `u64::MAX`; ns-3.10's default and the Expeditus artifact: 65,535).
    pub init_ssthresh: u64,
    /// Selective acknowledgements (RFC 2018) and SACK-based recovery.
    pub sack: bool,
    /// Acknowledge every `delack_count` full segments (1 = every segment).
    pub delack_count: u32,
    /// Maximum time an ACK is delayed (RFC 5681 §4.2: < 500 ms).
    pub delack_timeout: SimTime,
    /// RFC 6298 (2.4) lower bound on the RTO.
    pub min_rto: SimTime,
    /// RFC 6298 (2.5) upper bound on the RTO.
    pub max_rto: SimTime,
    /// RTO before any RTT sample; also the SYN retransmission timeout (RFC 6298 2.1).
    pub initial_rto: SimTime,
    /// Timer grid: a retransmission timer expires at the first multiple of
    /// this after its deadline (htsim's `TcpRtxTimerScanner`); zero: at the
    /// deadline.
    pub rto_tick: SimTime,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2).
    pub dupack_threshold: u32,
    /// Receive buffer: the window the receiver advertises, bytes.
    pub rcv_wnd: u32,
    pub cc: CongestionControl,
    /// Window growth. `false` (RFC 5681 §3.1, ns-2/ns-3): per ACK of new
    /// data, slow start adds at most one MSS and congestion avoidance
    /// MSS²/cwnd, so delayed ACKs halve the growth. `true` (RFC 3465
    /// appropriate byte counting, L = 2; Linux counts acked segments
    /// likewise): growth follows the bytes acknowledged.
    pub byte_counting: bool,
    /// Classic ECN (RFC 3168) for NewReno; DCTCP always uses ECN.
    pub ecn: bool,
    /// React to ECE as RFC 3168 §6.1.2 says without setting ECT on the
    /// segments: a guest whose hypervisor sets ECT on the outer header and
    /// relays path congestion (Clove §3.2). Implied by `ecn`.
    pub ece_response: bool,
    /// Segmentation offload (TSO/GSO) burst size, bytes; 0 = off. With it,
    /// while data is in flight the sender defers until the window lets it
    /// send min(tso_bytes, cwnd/2, unsent) at once (Linux
    /// `tcp_tso_should_defer`), then sends that burst back to back. This is
    /// the burstiness flowlet schemes rely on (CONGA §2.6, Clove §4).
    pub tso_bytes: u32,
    /// Restart after idle (RFC 5681 §4.1, Linux `tcp_slow_start_after_idle`
    /// = 1): when the sender has had nothing in flight and sent nothing for
    /// more than an RTO, it halves cwnd once per RTO elapsed, not below
    /// min(IW, cwnd), before sending new data (Linux `tcp_cwnd_restart`).
    pub restart_after_idle: bool,
    /// Duplicate-ACK threshold policy and spurious-retransmission undo.
    pub reordering: Reordering,
    /// The receiver reports duplicate segments with D-SACK (RFC 2883). Off
    /// by default (ns-3 has none); `Reordering::Adaptive` needs it for its
    /// D-SACK undo (the timestamp undo works without it).
    pub dsack: bool,
    /// What a retransmission timeout halves into ssthresh.
    pub rto_ssthresh: RtoSsthresh,
    /// What fast-recovery entry halves into ssthresh (NewReno).
    pub fr_ssthresh: FrSsthresh,
    /// cwnd when NewReno (without SACK) leaves fast recovery.
    pub recovery_exit: RecoveryExit,
    /// What `recover` records (without SACK).
    pub recover: Recover,
    /// PRR's reduction bound.
    pub prr_bound: PrrBound,
    /// Whether a lost retransmission is found from SACKs or waits for a timeout.
    pub lost_retransmission: LostRetransmission,
    /// RFC 6675 NextSeg rule 4: one rescue retransmission per fast recovery
    /// (ns-3 3.44 leaves this SHOULD out).
    pub rescue_retransmission: bool,
    /// Which ACKs restart the retransmission timer in fast recovery.
    pub partial_ack_timer: PartialAckTimer,
    /// SACK recovery: a partial ACK whose first unacknowledged segment has
    /// not been retransmitted sends one segment at once, beyond the window
    /// (ns-3 3.44 keeps RFC 6582 §3.2 step 4's retransmission with SACK).
    pub partial_ack_retransmit: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            header_bytes: 52,
            init_cwnd_pkts: 10,
            init_ssthresh: u64::MAX,
            sack: true,
            delack_count: 2,
            delack_timeout: SimTime::from_ms(1),
            min_rto: SimTime::from_ms(10),
            max_rto: SimTime::from_ms(60_000),
            initial_rto: SimTime::from_ms(10),
            rto_tick: SimTime::ZERO,
            dupack_threshold: 3,
            rcv_wnd: 4 << 20,
            cc: CongestionControl::NewReno,
            byte_counting: true,
            ecn: false,
            ece_response: false,
            tso_bytes: 0,
            restart_after_idle: false,
            reordering: Reordering::Fixed,
            dsack: false,
            rto_ssthresh: RtoSsthresh::FlightSize,
            fr_ssthresh: FrSsthresh::FlightSize,
            recovery_exit: RecoveryExit::Ssthresh,
            recover: Recover::SndMax,
            prr_bound: PrrBound::Ssrb,
            lost_retransmission: LostRetransmission::Sack,
            rescue_retransmission: true,
            partial_ack_timer: PartialAckTimer::SlowButSteady,
            partial_ack_retransmit: false,
        }
    }
}

impl TcpConfig {
    /// Whether data segments carry ECT (ECN-capable transport).
    pub fn ecn_capable(&self) -> bool {
        self.ecn || matches!(self.cc, CongestionControl::Dctcp { .. })
    }
}
