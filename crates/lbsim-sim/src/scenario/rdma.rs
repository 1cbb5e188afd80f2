//! The `[rdma]` section: RoCEv2 queue pairs, DCQCN, the switches' shared
//! buffer, PFC and ECN, used with `transport.kind = "rdma"`. Defaults are
//! the HPCC simulator's `run.py --cc dcqcn --bw 100` (docs/rdma.md lists
//! each with its source); `resolve` turns the section into lbsim-rdma's
//! `RdmaConfig` and lbsim-net's `PfcConfig`.

use super::check::{dur_us, word};
use super::{bad, ScenarioError};
use lbsim_engine::{BitsPerSec, SimTime};
use lbsim_net::PfcConfig;
use lbsim_rdma::{DcqcnConfig, RateControl, RdmaConfig};
use serde::{Deserialize, Serialize};

/// Which transport the hosts run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// TCP (`[transport]`) over drop-tail, ECN-marking switches.
    #[default]
    Tcp,
    /// RoCEv2 with DCQCN over a lossless (PFC) fabric (`[rdma]`).
    Rdma,
}

/// Where ACKs and NACKs queue at switches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AckClass {
    /// The data class: paused, charged and marked with data (the HPCC
    /// simulator).
    #[default]
    Data,
    /// The strict-priority control class, never paused (the ConWeave
    /// artifact).
    High,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RdmaCfg {
    /// Payload bytes per packet (the MTU's payload).
    pub mtu_bytes: u32,
    /// Header bytes per data packet (Ethernet + IPv4 + UDP + sequence header).
    pub header_bytes: u32,
    /// Bytes of an ACK or NACK frame.
    pub ack_bytes: u32,
    /// Shortest gap between two NACKs for the same missing byte.
    pub nack_interval_us: f64,
    /// Retransmission timeout: go back to the first unacknowledged byte after
    /// this long without an acknowledgement; 0 = none, as the HPCC simulator,
    /// where a flow whose last packets arrive out of order, or are lost,
    /// never completes. 4 ms as the ConWeave artifact's NICs.
    pub rto_us: f64,
    /// Bytes a queue pair may have unacknowledged (absent: no window).
    pub window_bytes: Option<u64>,
    /// What sets each queue pair's rate: "dcqcn", "dctcp" (DCTCP's law on
    /// the rate, the HPCC simulator's DCTCP mode) or "none" (line rate).
    #[serde(deserialize_with = "word")]
    pub rate_control: RateControl,
    /// Where ACKs queue at switches: "data" (with data, paused and marked
    /// with it) or "high" (strict priority, never paused).
    #[serde(deserialize_with = "word")]
    pub ack_class: AckClass,
    /// DCQCN's g, the gain of the α average.
    pub dcqcn_g: f64,
    /// Period of DCQCN's α update.
    pub dcqcn_alpha_interval_us: f64,
    /// Period of DCQCN's rate-decrease check.
    pub dcqcn_decrease_interval_us: f64,
    /// DCQCN's rate-increase timer T.
    pub dcqcn_increase_interval_us: f64,
    /// DCQCN's F: fast-recovery steps before additive increase.
    pub dcqcn_fast_recovery_steps: u32,
    /// DCQCN's additive-increase step R_AI (absent: the host rate / 5000, 20 Mb/s at 100 Gb/s).
    pub dcqcn_rate_ai_mbps: Option<f64>,
    /// DCQCN's hyper-increase step R_HAI (absent: the host rate / 500, 200 Mb/s at 100 Gb/s).
    pub dcqcn_rate_hai_mbps: Option<f64>,
    /// The lowest rate DCQCN cuts to.
    pub dcqcn_min_rate_gbps: f64,
    /// The target rate follows the current one at every cut.
    pub dcqcn_clamp_target: bool,
    /// With `rate_control = "dctcp"`: DCTCP's gain g.
    pub dctcp_g: f64,
    /// With `rate_control = "dctcp"`: the rate added per window outside CWR.
    pub dctcp_rate_ai_mbps: f64,
    /// PFC (IEEE 802.1Qbb) on: switches pause upstream ports instead of
    /// dropping. Off, the data class is lossy (`rto_us` repairs tail losses).
    pub pfc: bool,
    /// Shared buffer per switch.
    pub buffer_bytes: u64,
    /// Bytes per ingress port charged before the shared buffer.
    pub pfc_reserve_bytes: u64,
    /// RESUME once an ingress is this far below its threshold.
    pub pfc_resume_offset_bytes: u64,
    /// Headroom per ingress port, in one-way bandwidth-delay products of its link.
    pub pfc_headroom_bdps: u64,
    /// An ingress pauses at (free shared buffer) >> this shift, one less per
    /// doubling of its rate above the hosts'.
    pub pfc_shift: u8,
    /// RED marking starts above this many bytes queued at a 100 Gb/s port
    /// (scaled with the port's rate).
    pub ecn_kmin_bytes: u64,
    /// Every packet is marked above this many bytes (at 100 Gb/s, scaled).
    pub ecn_kmax_bytes: u64,
    /// Marking probability at Kmax.
    pub ecn_pmax: f64,
}

impl Default for RdmaCfg {
    fn default() -> Self {
        RdmaCfg {
            mtu_bytes: 1000,
            header_bytes: 48,
            ack_bytes: 60,
            nack_interval_us: 500.0,
            rto_us: 4000.0,
            window_bytes: None,
            rate_control: RateControl::Dcqcn,
            ack_class: AckClass::Data,
            dcqcn_g: 0.00390625,
            dcqcn_alpha_interval_us: 1.0,
            dcqcn_decrease_interval_us: 4.0,
            dcqcn_increase_interval_us: 300.0,
            dcqcn_fast_recovery_steps: 1,
            dcqcn_rate_ai_mbps: None,
            dcqcn_rate_hai_mbps: None,
            dcqcn_min_rate_gbps: 1.0,
            dcqcn_clamp_target: false,
            dctcp_g: 0.0625,
            dctcp_rate_ai_mbps: 1000.0,
            pfc: true,
            buffer_bytes: 33554432,
            pfc_reserve_bytes: 4096,
            pfc_resume_offset_bytes: 3072,
            pfc_headroom_bdps: 3,
            pfc_shift: 3,
            ecn_kmin_bytes: 400000,
            ecn_kmax_bytes: 1600000,
            ecn_pmax: 0.2,
        }
    }
}

impl RdmaCfg {
    /// Checks every value in the engine's units.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        if !(64..=9000).contains(&self.mtu_bytes) {
            return Err(bad("rdma.mtu_bytes", format!("must be from 64 to 9000 bytes, got {}", self.mtu_bytes)));
        }
        if !(20..=1000).contains(&self.header_bytes) {
            return Err(bad("rdma.header_bytes", format!("must be from 20 to 1000 bytes, got {}", self.header_bytes)));
        }
        if !(20..=1500).contains(&self.ack_bytes) {
            return Err(bad("rdma.ack_bytes", format!("must be from 20 to 1500 bytes, got {}", self.ack_bytes)));
        }
        dur_us("rdma.nack_interval_us", self.nack_interval_us, false)?;
        dur_us("rdma.rto_us", self.rto_us, false)?;
        if self.window_bytes.is_some_and(|w| w < self.mtu_bytes as u64) {
            return Err(bad("rdma.window_bytes", format!("must be at least one packet's payload (rdma.mtu_bytes = {})", self.mtu_bytes)));
        }
        if !(self.dcqcn_g > 0.0 && self.dcqcn_g <= 1.0) {
            return Err(bad("rdma.dcqcn_g", format!("must be in (0, 1], got {}", self.dcqcn_g)));
        }
        dur_us("rdma.dcqcn_alpha_interval_us", self.dcqcn_alpha_interval_us, true)?;
        dur_us("rdma.dcqcn_decrease_interval_us", self.dcqcn_decrease_interval_us, true)?;
        dur_us("rdma.dcqcn_increase_interval_us", self.dcqcn_increase_interval_us, true)?;
        for (k, v) in [("rdma.dcqcn_rate_ai_mbps", self.dcqcn_rate_ai_mbps), ("rdma.dcqcn_rate_hai_mbps", self.dcqcn_rate_hai_mbps)] {
            if let Some(x) = v {
                if !(x.is_finite() && (0.001..=1e8).contains(&x)) {
                    return Err(bad(k, format!("must be a rate from 0.001 to 100,000,000 Mb/s, got {x}")));
                }
            }
        }
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return Err(bad("rdma.dctcp_g", format!("must be in (0, 1], got {}", self.dctcp_g)));
        }
        if !(self.dctcp_rate_ai_mbps.is_finite() && (0.001..=1e8).contains(&self.dctcp_rate_ai_mbps)) {
            return Err(bad("rdma.dctcp_rate_ai_mbps", format!("must be a rate from 0.001 to 100,000,000 Mb/s, got {}", self.dctcp_rate_ai_mbps)));
        }
        BitsPerSec::input_gbps(self.dcqcn_min_rate_gbps).map_err(|m| bad("rdma.dcqcn_min_rate_gbps", m))?;
        if self.buffer_bytes < 65536 {
            return Err(bad("rdma.buffer_bytes", format!("must be at least 65536 bytes, got {}", self.buffer_bytes)));
        }
        if self.pfc_shift > 16 {
            return Err(bad("rdma.pfc_shift", format!("must be from 0 to 16, got {}", self.pfc_shift)));
        }
        if self.ecn_kmax_bytes < self.ecn_kmin_bytes {
            return Err(bad("rdma.ecn_kmax_bytes", format!("must be at least rdma.ecn_kmin_bytes ({}), got {}", self.ecn_kmin_bytes, self.ecn_kmax_bytes)));
        }
        if !(0.0..=1.0).contains(&self.ecn_pmax) {
            return Err(bad("rdma.ecn_pmax", format!("must be in [0, 1], got {}", self.ecn_pmax)));
        }
        Ok(())
    }

    /// The transport's settings for hosts of `line` rate.
    pub fn config(&self, line: BitsPerSec) -> RdmaConfig {
        let mut d = DcqcnConfig::connectx(line);
        d.g = self.dcqcn_g;
        d.alpha_interval = SimTime::from_us_f64(self.dcqcn_alpha_interval_us);
        d.decrease_interval = SimTime::from_us_f64(self.dcqcn_decrease_interval_us);
        d.increase_interval = SimTime::from_us_f64(self.dcqcn_increase_interval_us);
        d.fast_recovery_steps = self.dcqcn_fast_recovery_steps;
        if let Some(x) = self.dcqcn_rate_ai_mbps {
            d.rate_ai = BitsPerSec::from_gbps_f64(x / 1000.0);
        }
        if let Some(x) = self.dcqcn_rate_hai_mbps {
            d.rate_hai = BitsPerSec::from_gbps_f64(x / 1000.0);
        }
        d.min_rate = BitsPerSec::from_gbps_f64(self.dcqcn_min_rate_gbps);
        d.clamp_target = self.dcqcn_clamp_target;
        RdmaConfig {
            mtu_bytes: self.mtu_bytes,
            header_bytes: self.header_bytes,
            ack_bytes: self.ack_bytes,
            nack_interval: SimTime::from_us_f64(self.nack_interval_us),
            rto: (self.rto_us > 0.0).then(|| SimTime::from_us_f64(self.rto_us)),
            window: self.window_bytes,
            rate_control: self.rate_control,
            dcqcn: d,
            dctcp: lbsim_rdma::DctcpRateConfig { g: self.dctcp_g, rate_ai: BitsPerSec::from_gbps_f64(self.dctcp_rate_ai_mbps / 1000.0) },
        }
    }

    /// The lossless fabric's settings.
    pub fn pfc_config(&self) -> PfcConfig {
        PfcConfig {
            enabled: self.pfc,
            buffer_bytes: self.buffer_bytes,
            reserve_bytes: self.pfc_reserve_bytes,
            resume_offset_bytes: self.pfc_resume_offset_bytes,
            headroom_rtts: self.pfc_headroom_bdps,
            shift: self.pfc_shift,
            kmin_bytes_100g: self.ecn_kmin_bytes,
            kmax_bytes_100g: self.ecn_kmax_bytes,
            pmax: self.ecn_pmax,
        }
    }
}
