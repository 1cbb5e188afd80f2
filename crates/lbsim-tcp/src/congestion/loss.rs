//! The Reno family's response to loss: what ssthresh becomes at
//! fast-recovery entry and on a retransmission timeout, and what cwnd
//! becomes when a full ACK ends fast recovery. Each defaults to the RFC
//! rule; the variants reproduce other simulators (docs/fidelity.md), and
//! together `FrSsthresh::Cwnd`, `RtoSsthresh::Cwnd` and
//! `RecoveryExit::FlightSize` are htsim's `TcpSrc`:
//!
//! - fast recovery ([`FrSsthresh`]): RFC 5681 §3.2 step 2, eq. (4),
//!   FlightSize / 2; or RFC 2001's cwnd / 2 (htsim); or the RFC 6675 pipe
//!   at entry / 2 (ns-3 3.44);
//! - timeout ([`RtoSsthresh`]): RFC 5681 §3.1 eq. (4), FlightSize / 2 once
//!   per loss episode, during fast recovery no more than the ssthresh that
//!   recovery set (Linux's `tcp_enter_loss` keeps it); or ns-3's pipe / 2 on
//!   every timeout; or htsim's cwnd / 2 on every timeout;
//! - recovery exit ([`RecoveryExit`]): RFC 6582 §3.2 step 3 option 2,
//!   cwnd = ssthresh (ns-3); or option 1, min(ssthresh, FlightSize + MSS)
//!   (htsim), which applies to NewReno without SACK only (with SACK, PRR
//!   ends recovery at ssthresh, RFC 6937 §3).
//!
//! Every ssthresh is at least 2·MSS (RFC 5681 eq. (4)).

use super::Window;
use crate::config::{FrSsthresh, RecoveryExit, RtoSsthresh, TcpConfig};
use crate::sender::Recovery;

/// The configured loss-response rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossRules {
    pub fast_recovery: FrSsthresh,
    pub timeout: RtoSsthresh,
    /// `RecoveryExit::Ssthresh` when SACK is on, whatever the config says.
    pub exit: RecoveryExit,
}

impl LossRules {
    pub fn new(cfg: &TcpConfig) -> LossRules {
        LossRules { fast_recovery: cfg.fr_ssthresh, timeout: cfg.rto_ssthresh, exit: if cfg.sack { RecoveryExit::Ssthresh } else { cfg.recovery_exit } }
    }

    /// ssthresh at fast-recovery entry; `pipe` as for
    /// [`super::Congestion::on_fast_recovery`].
    pub fn fast_recovery_ssthresh(&self, w: &Window, pipe: u64) -> u64 {
        match self.fast_recovery {
            FrSsthresh::FlightSize => w.flight / 2,
            FrSsthresh::Cwnd => w.cwnd / 2,
            FrSsthresh::Pipe => pipe / 2,
        }
        .max(2 * w.mss)
    }

    /// ssthresh after a timeout in `recovery`; `pipe` is the RFC 6675 pipe
    /// just before it.
    pub fn timeout_ssthresh(&self, w: &Window, recovery: Recovery, pipe: u64) -> u64 {
        let floor = 2 * w.mss;
        match (self.timeout, recovery) {
            (RtoSsthresh::Cwnd, Recovery::Fast { .. }) => (w.ssthresh.min(w.flight + w.mss) / 2).max(floor),
            (RtoSsthresh::Cwnd, _) => (w.cwnd / 2).max(floor),
            (RtoSsthresh::FlightSize, Recovery::Fast { .. }) => w.ssthresh.min((w.flight / 2).max(floor)),
            (RtoSsthresh::FlightSize, Recovery::Open) => (w.flight / 2).max(floor),
            // "the value of ssthresh is held constant" on a repeated timeout
            (RtoSsthresh::FlightSize, Recovery::Loss { .. }) => w.ssthresh,
            (RtoSsthresh::Pipe, _) => (pipe / 2).max(floor),
        }
    }

    /// cwnd when a full ACK ends fast recovery (FlightSize after it).
    pub fn exit_cwnd(&self, w: &Window) -> u64 {
        match self.exit {
            RecoveryExit::FlightSize => w.ssthresh.min(w.flight.max(w.mss) + w.mss),
            RecoveryExit::Ssthresh => w.ssthresh.max(w.mss),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn rules(fast_recovery: FrSsthresh, timeout: RtoSsthresh, exit: RecoveryExit) -> LossRules {
        LossRules { fast_recovery, timeout, exit }
    }

    #[test]
    fn fast_recovery_halves_flight_size_or_cwnd() {
        let w = Window { cwnd: 20 * MSS, ssthresh: u64::MAX, mss: MSS, flight: 8 * MSS };
        let rfc = rules(FrSsthresh::FlightSize, RtoSsthresh::FlightSize, RecoveryExit::Ssthresh);
        assert_eq!(rfc.fast_recovery_ssthresh(&w, 0), 4 * MSS);
        let htsim = LossRules { fast_recovery: FrSsthresh::Cwnd, ..rfc };
        assert_eq!(htsim.fast_recovery_ssthresh(&w, 0), 10 * MSS);
        let small = Window { flight: 3 * MSS, ..w };
        assert_eq!(rfc.fast_recovery_ssthresh(&small, 0), 2 * MSS, "at least 2·MSS");
        let ns3 = LossRules { fast_recovery: FrSsthresh::Pipe, ..rfc };
        assert_eq!(ns3.fast_recovery_ssthresh(&w, 5 * MSS), 2_500, "the pipe at entry / 2");
    }

    #[test]
    fn timeout_ssthresh_per_rule_and_state() {
        let w = Window { cwnd: 12 * MSS, ssthresh: 5 * MSS, mss: MSS, flight: 16 * MSS };
        let (open, fast, loss) = (Recovery::Open, Recovery::Fast { recover: 0 }, Recovery::Loss { recover: 0 });
        let r = |timeout| rules(FrSsthresh::FlightSize, timeout, RecoveryExit::Ssthresh);
        let flight = r(RtoSsthresh::FlightSize);
        assert_eq!(flight.timeout_ssthresh(&w, open, 0), 8 * MSS);
        assert_eq!(flight.timeout_ssthresh(&w, fast, 0), 5 * MSS, "keeps recovery's reduction");
        assert_eq!(flight.timeout_ssthresh(&w, loss, 0), 5 * MSS, "held on a repeated timeout");
        let pipe = r(RtoSsthresh::Pipe);
        assert_eq!(pipe.timeout_ssthresh(&w, loss, 6 * MSS), 3 * MSS);
        let cwnd = r(RtoSsthresh::Cwnd);
        assert_eq!(cwnd.timeout_ssthresh(&w, loss, 0), 6 * MSS);
        assert_eq!(cwnd.timeout_ssthresh(&w, fast, 0), 2_500, "min(ssthresh, FlightSize + MSS) / 2");
        let low = Window { ssthresh: 3 * MSS, ..w };
        assert_eq!(cwnd.timeout_ssthresh(&low, fast, 0), 2 * MSS, "floored at 2·MSS");
    }

    #[test]
    fn recovery_exit_option_1_or_2() {
        let w = Window { cwnd: 3 * MSS, ssthresh: 6 * MSS, mss: MSS, flight: 2 * MSS };
        let opt2 = rules(FrSsthresh::FlightSize, RtoSsthresh::FlightSize, RecoveryExit::Ssthresh);
        assert_eq!(opt2.exit_cwnd(&w), 6 * MSS);
        let opt1 = LossRules { exit: RecoveryExit::FlightSize, ..opt2 };
        assert_eq!(opt1.exit_cwnd(&w), 3 * MSS);
        assert_eq!(opt1.exit_cwnd(&Window { flight: 0, ..w }), 2 * MSS, "max(FlightSize, MSS) + MSS");
        let sack = TcpConfig { recovery_exit: RecoveryExit::FlightSize, ..TcpConfig::default() };
        assert_eq!(LossRules::new(&sack).exit, RecoveryExit::Ssthresh, "option 1 is NewReno's without SACK");
    }
}
