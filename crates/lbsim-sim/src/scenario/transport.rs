//! The `[transport]` section: TCP's settings in the scenario's units. The
//! words of its choices are lbsim-tcp's enums themselves (`cc`,
//! `reordering`, `rto_ssthresh`, ...) and every default is lbsim-tcp's
//! `TcpConfig::default()`, so a setting is typed and defaulted once;
//! `resolve` turns the section into the run's `TcpConfig`.

use super::check::{dur_ms, dur_us, word};
use super::rdma::TransportKind;
use super::{bad, ScenarioError};
use lbsim_tcp::{
    CongestionControl, CwndGrowth, FrSsthresh, LostRetransmission, PartialAckTimer, PrrBound, Recover, RecoveryExit, Reordering, RtoSsthresh, TcpConfig,
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportCfg {
    /// The hosts' transport: "tcp" (this section) or "rdma" (RoCEv2 with
    /// DCQCN over a lossless PFC fabric: the `[rdma]` section, docs/rdma.md).
    #[serde(deserialize_with = "word")]
    pub kind: TransportKind,
    /// "newreno" or "dctcp".
    #[serde(deserialize_with = "word")]
    pub cc: CongestionControl,
    /// DCTCP's gain g for the marked-fraction average (RFC 8257).
    pub dctcp_g: f64,
    /// Classic ECN (RFC 3168) for NewReno.
    pub ecn: bool,
    /// TCP payload bytes per full segment.
    pub mss_bytes: u32,
    /// IP + TCP header bytes per segment (52 = 20 + 20 + 12-byte timestamp option).
    pub header_bytes: u32,
    /// Initial window, segments (RFC 6928).
    pub init_cwnd_pkts: u32,
    /// Initial slow-start threshold, bytes (absent: unlimited, RFC 5681).
    pub init_ssthresh_bytes: Option<u64>,
    /// Selective acknowledgements (RFC 2018) with RFC 6675 loss recovery.
    pub sack: bool,
    /// ACK every N full segments (1 = no delayed ACKs).
    pub delayed_ack: u32,
    /// Longest an ACK is delayed.
    pub delayed_ack_timeout_us: f64,
    /// Lower bound of the retransmission timeout (RFC 6298 §2.4).
    pub min_rto_ms: f64,
    /// RTO before the first RTT sample, and the SYN retransmission timeout
    /// (default: `min_rto_ms`).
    pub initial_rto_ms: Option<f64>,
    /// Upper bound of the backed-off retransmission timeout.
    pub max_rto_ms: f64,
    /// Retransmission timers expire only on a grid of this period: at the
    /// first multiple of it after the deadline (htsim checks every
    /// connection's timer every 10 ms); 0 = at the deadline.
    pub rto_tick_ms: f64,
    /// Duplicate ACKs that start fast retransmit (with `reordering = "fixed"`).
    pub dupack_threshold: u32,
    /// Receive window advertised by every receiver.
    pub rcv_wnd_bytes: u32,
    /// Window growth per ACK: "bytes" (RFC 3465 byte counting, Linux-like:
    /// growth follows the data acknowledged) or "per_ack" (RFC 5681 §3.1 as
    /// written and as ns-2/ns-3 do: one MSS per ACK in slow start,
    /// MSS²/cwnd in congestion avoidance, so delayed ACKs halve it).
    #[serde(deserialize_with = "word")]
    pub cwnd_growth: CwndGrowth,
    /// Segmentation offload burst, bytes (0 = off, the default, as in ns-3):
    /// the sender defers until it can send this much (or cwnd/2) back to
    /// back, as Linux TSO does. Flowlet schemes need these bursts to find
    /// flowlets (Clove §4 encapsulates 64 KB TSO segments): the Clove and
    /// CONGA reproductions set 65536.
    pub tso_bytes: u32,
    /// Duplicate-ACK threshold: "fixed" (`dupack_threshold`, RFC 5681;
    /// ns-2/ns-3) or "linux" (Linux before RACK: the threshold rises to the
    /// reordering measured from SACKs, up to 300 packets, and spurious
    /// window cuts are undone on D-SACK or timestamp evidence, RFC
    /// 3708/3522/4015). Use "linux" where the paper's hosts ran Linux.
    #[serde(deserialize_with = "word")]
    pub reordering: Reordering,
    /// With `reordering = "linux"`: the highest the duplicate-ACK threshold
    /// rises to, packets (Linux `net.ipv4.tcp_max_reordering`; absent:
    /// Linux's 300). Spraying schemes can reorder deeper than that on
    /// asymmetric paths: a higher cap lets the sender learn the degree
    /// instead of retransmitting spuriously.
    pub max_reordering_pkts: Option<u32>,
    /// Receivers report duplicate segments with D-SACK (RFC 2883); default:
    /// on with `reordering = "linux"`, else off.
    pub dsack: Option<bool>,
    /// Restart after idle (RFC 5681 §4.1; Linux `tcp_slow_start_after_idle`,
    /// on by default there): cwnd halves per idle RTO before new data.
    pub restart_after_idle: bool,
    /// The sender reduces its window on ECE (RFC 3168 §6.1.2) even though it
    /// does not set ECT itself: a guest whose hypervisor relays path
    /// congestion to it (Clove §3.2: "relays ECN to the sending VM,
    /// triggering it to throttle back"). `ecn = true` implies it.
    pub ece_response: bool,
    /// What a retransmission timeout halves into ssthresh: "flight_size"
    /// (RFC 5681 eq. 4, held on repeated timeouts; Linux-like), "pipe"
    /// (ns-3 3.44: the RFC 6675 pipe before the timeout, SACKed and lost
    /// bytes excluded, recomputed on every timeout) or "cwnd" (htsim: cwnd,
    /// in fast recovery min(ssthresh, FlightSize + MSS), on every timeout).
    #[serde(deserialize_with = "word")]
    pub rto_ssthresh: RtoSsthresh,
    /// What fast-recovery entry halves into ssthresh: "flight_size" (RFC
    /// 5681 eq. 4), "cwnd" (RFC 2001; htsim) or "pipe" (ns-3 3.44: the RFC
    /// 6675 pipe at entry, SACKed and lost bytes excluded; PRR's RecoverFS
    /// is that pipe too).
    #[serde(deserialize_with = "word")]
    pub fr_ssthresh: FrSsthresh,
    /// cwnd when a full ACK ends fast recovery without SACK (RFC 6582 §3.2
    /// step 3): "ssthresh" (option 2; ns-3) or "flight_size" (option 1,
    /// min(ssthresh, FlightSize + MSS), no burst; htsim). Needs sack = false.
    #[serde(deserialize_with = "word")]
    pub recovery_exit: RecoveryExit,
    /// What `recover` records at fast-recovery entry and at a timeout
    /// without SACK: "snd_max" (RFC 6582) or "snd_nxt" (htsim, whose one
    /// highest-sent variable falls back to snd.una on a timeout). Needs
    /// sack = false.
    #[serde(deserialize_with = "word")]
    pub recover: Recover,
    /// PRR reduction bound (RFC 6937 §3): "ssrb" (slow-start bound, the
    /// RFC's recommendation, Linux) or "crb" (conservative, ns-3 3.44).
    #[serde(deserialize_with = "word")]
    pub prr_bound: PrrBound,
    /// A retransmission lost again with SACK: "sack" (found once enough
    /// data sent after it is SACKed and resent without a timeout, as Linux
    /// does) or "timeout" (left to the retransmission timer, ns-3 3.44).
    #[serde(deserialize_with = "word")]
    pub lost_retransmission: LostRetransmission,
    /// RFC 6675 NextSeg rule 4: one rescue retransmission of the highest
    /// un-SACKed segment per fast recovery (ns-3 3.44 has none).
    pub rescue_retransmission: bool,
    /// Which ACKs restart the retransmission timer in fast recovery (RFC
    /// 6582 §4.2): "slow_but_steady" (every ACK of new data, Linux) or
    /// "impatient" (only the first partial ACK, ns-3 3.44).
    #[serde(deserialize_with = "word")]
    pub partial_ack_timer: PartialAckTimer,
    /// SACK recovery: a partial ACK whose first unacknowledged segment has
    /// not been retransmitted sends one segment at once, beyond the window
    /// (NextSeg rule 1 or 2, else that segment; ns-3 3.44).
    pub partial_ack_retransmit: bool,
    /// "per_flow": a new connection (with handshake) per flow;
    /// "persistent": `connections_per_pair` connections per (src, dst), open
    /// from the pair's first flow to the end, flows queued on the
    /// least-loaded one.
    #[serde(deserialize_with = "word")]
    pub connections: Connections,
    /// Connections per (src, dst) pair with `connections = "persistent"`.
    /// Each holds about 1.5 KB; a run whose pairs × connections would not
    /// fit in half of the machine's memory is refused before it starts.
    pub connections_per_pair: u32,
}

/// How flows map onto connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connections {
    /// A new connection (with handshake) per flow.
    #[default]
    PerFlow,
    /// A fixed pool of connections per (src, dst) pair.
    Persistent,
}

impl Default for TransportCfg {
    /// lbsim-tcp's defaults in the scenario's units; what only the scenario
    /// has (absent keys, the connection model) is set here.
    fn default() -> Self {
        let d = TcpConfig::default();
        TransportCfg {
            kind: TransportKind::Tcp,
            cc: d.cc,
            dctcp_g: CongestionControl::DCTCP_G,
            ecn: d.ecn,
            mss_bytes: d.mss,
            header_bytes: d.header_bytes,
            init_cwnd_pkts: d.init_cwnd_pkts,
            init_ssthresh_bytes: None,
            sack: d.sack,
            delayed_ack: d.delack_count,
            delayed_ack_timeout_us: d.delack_timeout.as_us_f64(),
            min_rto_ms: d.min_rto.as_ms_f64(),
            rto_tick_ms: d.rto_tick.as_ms_f64(),
            initial_rto_ms: None,
            max_rto_ms: d.max_rto.as_ms_f64(),
            dupack_threshold: d.dupack_threshold,
            rcv_wnd_bytes: d.rcv_wnd,
            cwnd_growth: CwndGrowth::of(d.byte_counting),
            tso_bytes: d.tso_bytes,
            reordering: d.reordering,
            max_reordering_pkts: None,
            dsack: None,
            restart_after_idle: d.restart_after_idle,
            ece_response: d.ece_response,
            rto_ssthresh: d.rto_ssthresh,
            fr_ssthresh: d.fr_ssthresh,
            recovery_exit: d.recovery_exit,
            recover: d.recover,
            prr_bound: d.prr_bound,
            lost_retransmission: d.lost_retransmission,
            rescue_retransmission: d.rescue_retransmission,
            partial_ack_timer: d.partial_ack_timer,
            partial_ack_retransmit: d.partial_ack_retransmit,
            connections: Connections::PerFlow,
            connections_per_pair: 3,
        }
    }
}

impl TransportCfg {
    /// Checks the congestion control, segment sizes, windows, timers and TCP variants.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return Err(bad("transport.dctcp_g", format!("must be in (0, 1], got {}", self.dctcp_g)));
        }
        if !(64..=65_000).contains(&self.mss_bytes) {
            return Err(bad("transport.mss_bytes", format!("must be from 64 to 65000 bytes, got {}", self.mss_bytes)));
        }
        if !(20..=1000).contains(&self.header_bytes) {
            return Err(bad("transport.header_bytes", format!("must be from 20 to 1000 bytes (IP + TCP headers and options), got {}", self.header_bytes)));
        }
        if self.init_ssthresh_bytes.is_some_and(|b| b < 2 * self.mss_bytes as u64) {
            return Err(bad("transport.init_ssthresh_bytes", format!("must be at least 2 segments ({} bytes)", 2 * self.mss_bytes)));
        }
        if self.init_cwnd_pkts == 0 {
            return Err(bad("transport.init_cwnd_pkts", "must be >= 1"));
        }
        if self.dupack_threshold == 0 {
            return Err(bad("transport.dupack_threshold", "must be >= 1"));
        }
        dur_ms("transport.min_rto_ms", self.min_rto_ms, true)?;
        dur_ms("transport.max_rto_ms", self.max_rto_ms, true)?;
        dur_ms("transport.rto_tick_ms", self.rto_tick_ms, false)?;
        if let Some(x) = self.initial_rto_ms {
            dur_ms("transport.initial_rto_ms", x, true)?;
        }
        dur_us("transport.delayed_ack_timeout_us", self.delayed_ack_timeout_us, false)?;
        if self.rcv_wnd_bytes < self.mss_bytes {
            return Err(bad("transport.rcv_wnd_bytes", "must be at least one MSS"));
        }
        if self.sack && self.recovery_exit != RecoveryExit::Ssthresh {
            return Err(bad(
                "transport.recovery_exit",
                "\"flight_size\" is NewReno's exit without SACK (with SACK, PRR sets the window): needs transport.sack = false",
            ));
        }
        if self.sack && self.recover != Recover::SndMax {
            return Err(bad("transport.recover", "\"snd_nxt\" applies without SACK: needs transport.sack = false"));
        }
        if let Some(m) = self.max_reordering_pkts {
            if !matches!(self.reordering, Reordering::Adaptive { .. }) {
                return Err(bad("transport.max_reordering_pkts", "applies with transport.reordering = \"linux\" (\"fixed\" keeps dupack_threshold)"));
            }
            if m < self.dupack_threshold {
                return Err(bad(
                    "transport.max_reordering_pkts",
                    format!("must be at least transport.dupack_threshold ({}), where the threshold starts; got {m}", self.dupack_threshold),
                ));
            }
        }
        if self.lost_retransmission != LostRetransmission::Sack && !self.sack {
            return Err(bad("transport.lost_retransmission", "applies with SACK (without it NewReno resends on partial ACKs): needs transport.sack = true"));
        }
        if self.partial_ack_retransmit && !self.sack {
            return Err(bad(
                "transport.partial_ack_retransmit",
                "applies with SACK (without it NewReno always resends on a partial ACK): needs transport.sack = true",
            ));
        }
        if !self.rescue_retransmission && !self.sack {
            return Err(bad("transport.rescue_retransmission", "is RFC 6675's rule and applies with SACK: needs transport.sack = true"));
        }
        if self.dsack == Some(true) && !self.sack {
            return Err(bad("transport.dsack", "D-SACK needs transport.sack = true"));
        }
        if self.connections_per_pair == 0 {
            return Err(bad("transport.connections_per_pair", "must be >= 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TransportCfg;
    use crate::Scenario;
    use lbsim_tcp::{CongestionControl, LostRetransmission, PartialAckTimer, Reordering, RtoSsthresh};

    const MIN: &str = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\nhost_rate_gbps = 10\nfabric_rate_gbps = 40\n";

    #[test]
    fn transport_defaults_in_the_reference_are_the_parsers() {
        // docs/scenario.md is generated by reading the Rust source; this
        // checks what it read against the defaults the parser applies
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario.md")).unwrap();
        let defaults = serde_json::to_value(TransportCfg::default()).unwrap();
        for (key, value) in defaults.as_object().unwrap() {
            let row = doc.lines().find(|l| l.starts_with(&format!("| `transport.{key}` |"))).unwrap_or_else(|| panic!("transport.{key} is not documented"));
            let cell = row.split('|').nth(4).unwrap().trim();
            let same = match value {
                serde_json::Value::Null => cell.is_empty(),
                serde_json::Value::Number(x) => cell.parse::<f64>().ok() == x.as_f64(),
                v => cell == serde_json::to_string(v).unwrap(),
            };
            assert!(same, "transport.{key}: the reference says {cell:?}, the parser defaults to {value}");
        }
    }

    #[test]
    fn words_read_as_the_enums_and_the_run_config_follows_them() {
        let s = Scenario::from_toml(MIN, &["transport.cc=dctcp".into(), "network.ecn_k_pkts=20".into(), "transport.dctcp_g=0.5".into()]).unwrap();
        assert_eq!(s.tcp_config().cc, CongestionControl::Dctcp { g: 0.5 });
        let s = Scenario::from_toml(MIN, &["transport.reordering=linux".into(), "transport.rto_ssthresh=pipe".into()]).unwrap();
        let c = s.tcp_config();
        assert_eq!((c.reordering, c.rto_ssthresh, c.dsack), (Reordering::LINUX, RtoSsthresh::Pipe, true));
        // the words are written back as read
        let t = serde_json::to_value(&s.transport).unwrap();
        assert_eq!((t["reordering"].as_str(), t["rto_ssthresh"].as_str(), t["cc"].as_str()), (Some("linux"), Some("pipe"), Some("newreno")));
        // an unknown word names the key and lists the words, in one line
        let e = Scenario::from_toml(MIN, &["transport.cwnd_growth=\"bites\"".into()]).unwrap_err();
        assert_eq!((e.field.as_str(), e.msg.as_str()), ("transport.cwnd_growth", "must be \"bytes\" or \"per_ack\", got \"bites\""));
        let e = Scenario::from_toml(MIN, &["transport.prr_bound=3".into()]).unwrap_err();
        assert_eq!((e.field.as_str(), e.msg.as_str()), ("transport.prr_bound", "invalid type: integer `3`, expected a string"));
    }

    #[test]
    fn max_reordering_caps_the_linux_threshold_and_needs_it() {
        let sets = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = Scenario::from_toml(MIN, &sets(&["transport.reordering=linux", "transport.max_reordering_pkts=1000"])).unwrap();
        assert_eq!(s.tcp_config().reordering, Reordering::Adaptive { max_pkts: 1000 });
        let s = Scenario::from_toml(MIN, &sets(&["transport.reordering=linux"])).unwrap();
        assert_eq!(s.tcp_config().reordering, Reordering::LINUX);
        let e = Scenario::from_toml(MIN, &sets(&["transport.max_reordering_pkts=1000"])).unwrap_err();
        assert!(e.field == "transport.max_reordering_pkts" && e.msg.contains("reordering = \"linux\""), "{e}");
        let e = Scenario::from_toml(MIN, &sets(&["transport.reordering=linux", "transport.max_reordering_pkts=2"])).unwrap_err();
        assert!(e.field == "transport.max_reordering_pkts" && e.msg.contains("dupack_threshold (3)"), "{e}");
    }

    #[test]
    fn the_ns3_recovery_rules_reach_the_run_and_need_sack() {
        let sets = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ns3 = [
            "transport.lost_retransmission=\"timeout\"",
            "transport.rescue_retransmission=false",
            "transport.partial_ack_timer=\"impatient\"",
            "transport.partial_ack_retransmit=true",
        ];
        let c = Scenario::from_toml(MIN, &sets(&ns3)).unwrap().tcp_config();
        assert_eq!(
            (c.lost_retransmission, c.rescue_retransmission, c.partial_ack_timer, c.partial_ack_retransmit),
            (LostRetransmission::Timeout, false, PartialAckTimer::Impatient, true)
        );
        for (key, set) in [("transport.lost_retransmission", ns3[0]), ("transport.rescue_retransmission", ns3[1]), ("transport.partial_ack_retransmit", ns3[3])]
        {
            let e = Scenario::from_toml(MIN, &sets(&["transport.sack=false", set])).unwrap_err();
            assert!(e.field == key && e.msg.contains("transport.sack = true"), "{e}");
        }
        let e = Scenario::from_toml(MIN, &sets(&["transport.partial_ack_timer=\"patient\""])).unwrap_err();
        assert_eq!((e.field.as_str(), e.msg.as_str()), ("transport.partial_ack_timer", "must be \"slow_but_steady\" or \"impatient\", got \"patient\""));
    }

    #[test]
    fn the_defaults_are_lbsim_tcps() {
        let s = Scenario::from_toml(MIN, &[]).unwrap();
        let (got, want) = (s.tcp_config(), lbsim_tcp::TcpConfig::default());
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
}
