//! The transport's settings in engine units. Defaults are the HPCC
//! simulator's `run.py --cc dcqcn --bw 100` (its ConnectX-4 settings);
//! docs/rdma.md lists each beside the DCQCN paper's value.

use lbsim_engine::{BitsPerSec, SimTime};

/// What sets a queue pair's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateControl {
    /// DCQCN (Zhu et al., SIGCOMM'15), ConnectX form ([`crate::dcqcn`]).
    Dcqcn,
    /// DCTCP's law on the rate ([`crate::dctcp`]).
    Dctcp,
    /// None: every QP sends at line rate (PFC alone keeps the fabric
    /// lossless).
    None,
}

/// DCQCN's reaction-point parameters (paper §3.1 names; HPCC simulator
/// `RdmaHw` attribute in brackets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnConfig {
    /// g, the gain of the α average [EWMA_GAIN].
    pub g: f64,
    /// Period of the α update [ALPHA_RESUME_INTERVAL].
    pub alpha_interval: SimTime,
    /// Period of the rate-decrease check: a CNP since the last check cuts
    /// the rate [RATE_DECREASE_INTERVAL].
    pub decrease_interval: SimTime,
    /// T, the rate-increase timer, restarted by every cut [RP_TIMER].
    pub increase_interval: SimTime,
    /// F, the fast-recovery steps before additive increase
    /// [FAST_RECOVERY_TIMES].
    pub fast_recovery_steps: u32,
    /// R_AI, the additive-increase step [RATE_AI].
    pub rate_ai: BitsPerSec,
    /// R_HAI, the hyper-increase step [RATE_HAI].
    pub rate_hai: BitsPerSec,
    /// The lowest rate a cut reaches [MIN_RATE].
    pub min_rate: BitsPerSec,
    /// The target rate follows the current rate at every cut, not only
    /// after an increase [CLAMP_TARGET_RATE].
    pub clamp_target: bool,
    /// The rate a flow's first CNP sets, as a fraction of the current one
    /// [RateOnFirstCnp].
    pub rate_on_first_cnp: f64,
}

impl DcqcnConfig {
    /// The HPCC simulator's `run.py --cc dcqcn` values for host links of
    /// `line`: R_AI = line / 5000 and R_HAI = line / 500 (20 and 200 Mb/s
    /// at 100 Gb/s), timers 1 / 4 / 300 µs.
    pub fn connectx(line: BitsPerSec) -> DcqcnConfig {
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_interval: SimTime::from_us(1),
            decrease_interval: SimTime::from_us(4),
            increase_interval: SimTime::from_us(300),
            fast_recovery_steps: 1,
            rate_ai: BitsPerSec(line.0 / 5000),
            rate_hai: BitsPerSec(line.0 / 500),
            min_rate: BitsPerSec::gbps(1),
            clamp_target: false,
            rate_on_first_cnp: 1.0,
        }
    }
}

/// One run's RDMA transport settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RdmaConfig {
    /// Payload bytes per packet (the MTU's payload).
    pub mtu_bytes: u32,
    /// Header bytes per data packet (Ethernet 14 + IPv4 20 + UDP 8 + the
    /// sequence header 6 = 48 in the HPCC simulator; a RoCEv2 BTH is 12).
    pub header_bytes: u32,
    /// Bytes of an ACK or NACK frame on the wire.
    pub ack_bytes: u32,
    /// The receiver answers a gap with a NACK at most once per this long
    /// for the same expected sequence.
    pub nack_interval: SimTime,
    /// Retransmission timeout: go back to the first unacknowledged byte
    /// when nothing was acknowledged for this long (`None`: no timer, as
    /// the HPCC simulator; ConnectX and the ConWeave artifact use 4 ms).
    pub rto: Option<SimTime>,
    /// Window in bytes (`None`: no window; the HPCC simulator's HAS_WIN
    /// sets one BDP).
    pub window: Option<u64>,
    pub rate_control: RateControl,
    pub dcqcn: DcqcnConfig,
    pub dctcp: crate::DctcpRateConfig,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        RdmaConfig {
            mtu_bytes: 1000,
            header_bytes: 48,
            ack_bytes: 60,
            nack_interval: SimTime::from_us(500),
            rto: None,
            window: None,
            rate_control: RateControl::Dcqcn,
            dcqcn: DcqcnConfig::connectx(BitsPerSec::gbps(100)),
            dctcp: crate::DctcpRateConfig { g: 1.0 / 16.0, rate_ai: BitsPerSec(1_000_000_000) },
        }
    }
}
