//! NewReno's congestion control (RFC 5681 §3.1, RFC 6582): slow start and
//! congestion avoidance, growing per ACK (RFC 5681 eq. (2)/(3): one MSS,
//! then MSS²/cwnd) or with appropriate byte counting (RFC 3465, L = 2);
//! MPTCP subflows replace congestion avoidance with LIA's coupled increase
//! (RFC 6356 §3). Classic ECN (RFC 3168 §6.1.2) halves the window on
//! ECN-Echo as on a loss. The ssthresh and cwnd choices on loss are
//! [`LossRules`].

use super::{Ack, Congestion, Lia, LossRules, Window};
use crate::config::TcpConfig;
use crate::sender::Recovery;

#[derive(Clone, Debug)]
pub struct NewReno {
    /// RFC 3465 byte counting (else RFC 5681 per-ACK growth).
    byte_counting: bool,
    /// React to ECN-Echo (RFC 3168 §6.1.2).
    ecn: bool,
    rules: LossRules,
    /// Bytes acknowledged towards the next MSS of congestion avoidance
    /// (RFC 3465 §2.1).
    ca_acc: u64,
    /// Fractional bytes of per-ACK congestion avoidance growth.
    ca_frac: f64,
    coupling: Option<Lia>,
}

impl NewReno {
    pub fn new(cfg: &TcpConfig) -> NewReno {
        NewReno { byte_counting: cfg.byte_counting, ecn: cfg.ecn || cfg.ece_response, rules: LossRules::new(cfg), ca_acc: 0, ca_frac: 0.0, coupling: None }
    }

    /// Window growth on `acked` newly acknowledged bytes: slow start below
    /// ssthresh, congestion avoidance at or above it.
    pub fn grow(&mut self, w: &mut Window, acked: u64) {
        let mss = w.mss;
        if w.cwnd < w.ssthresh {
            // slow start: RFC 3465 (L = 2) or RFC 5681 (one MSS per ACK)
            let inc = if self.byte_counting { acked.min(2 * mss) } else { acked.min(mss) };
            w.cwnd = (w.cwnd + inc).min(w.ssthresh.max(w.cwnd));
            return;
        }
        match self.coupling {
            None if self.byte_counting => {
                // RFC 3465 congestion avoidance: one MSS per cwnd of bytes acked
                self.ca_acc += acked;
                if self.ca_acc >= w.cwnd {
                    self.ca_acc -= w.cwnd;
                    w.cwnd += mss;
                }
            }
            None => {
                // RFC 5681 eq. (3): MSS*MSS/cwnd per ACK
                self.ca_frac += (mss * mss) as f64 / w.cwnd as f64;
                let whole = self.ca_frac.floor();
                w.cwnd += whole as u64;
                self.ca_frac -= whole;
            }
            Some(lia) => {
                self.ca_frac += lia.increase(acked, mss, w.cwnd);
                let whole = self.ca_frac.floor();
                w.cwnd += whole as u64;
                self.ca_frac -= whole;
            }
        }
    }
}

impl Congestion for NewReno {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, ack: &Ack) {
        if matches!(ack.recovery, Recovery::Fast { .. }) || !ack.cwnd_limited {
            return; // RFC 7661: no growth while application- or rwnd-limited
        }
        self.grow(w, ack.acked);
    }

    /// RFC 3168 §6.1.2: ssthresh = max(FlightSize / 2, 2·MSS), cwnd = ssthresh.
    fn on_ece(&mut self, w: &mut Window) -> bool {
        if !self.ecn {
            return false;
        }
        w.ssthresh = (w.flight / 2).max(2 * w.mss);
        w.cwnd = w.ssthresh;
        true
    }

    fn on_fast_recovery(&mut self, w: &mut Window, pipe: u64) {
        w.ssthresh = self.rules.fast_recovery_ssthresh(w, pipe);
    }

    fn on_recovery_exit(&mut self, w: &mut Window) {
        w.cwnd = self.rules.exit_cwnd(w);
    }

    fn on_timeout(&mut self, w: &mut Window, recovery: Recovery, pipe: u64) {
        w.ssthresh = self.rules.timeout_ssthresh(w, recovery, pipe);
        w.cwnd = w.mss;
        self.ca_acc = 0;
    }

    fn set_coupling(&mut self, lia: Lia) {
        self.coupling = Some(lia);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn reno(byte_counting: bool) -> NewReno {
        NewReno::new(&TcpConfig { byte_counting, mss: MSS as u32, ..TcpConfig::default() })
    }

    fn window(cwnd: u64, ssthresh: u64) -> Window {
        Window { cwnd, ssthresh, mss: MSS, flight: cwnd }
    }

    fn ack(acked: u64) -> Ack {
        Ack { acked, ece: false, snd_una: 0, snd_max: 0, recovery: Recovery::Open, cwnd_limited: true }
    }

    #[test]
    fn slow_start_adds_one_mss_per_ack_or_the_bytes_acked_up_to_two() {
        // RFC 5681 eq. (2): one MSS per ACK, however much it acknowledges
        let (mut r, mut w) = (reno(false), window(10 * MSS, u64::MAX));
        r.on_ack(&mut w, &ack(2 * MSS));
        assert_eq!(w.cwnd, 11 * MSS);
        // RFC 3465 §2.2: min(bytes acked, L·SMSS), L = 2
        let (mut r, mut w) = (reno(true), window(10 * MSS, u64::MAX));
        r.on_ack(&mut w, &ack(2 * MSS));
        assert_eq!(w.cwnd, 12 * MSS);
        r.on_ack(&mut w, &ack(5 * MSS));
        assert_eq!(w.cwnd, 14 * MSS);
        // slow start stops at ssthresh
        let mut w = window(10 * MSS, 10 * MSS + 500);
        r.on_ack(&mut w, &ack(2 * MSS));
        assert_eq!(w.cwnd, 10 * MSS + 500);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_of_bytes() {
        // RFC 3465 §2.1: one MSS once cwnd bytes have been acknowledged
        let (mut r, mut w) = (reno(true), window(10 * MSS, 0));
        for _ in 0..9 {
            r.on_ack(&mut w, &ack(MSS));
        }
        assert_eq!(w.cwnd, 10 * MSS);
        r.on_ack(&mut w, &ack(MSS));
        assert_eq!(w.cwnd, 11 * MSS);
        // RFC 5681 eq. (3): MSS²/cwnd per ACK, whatever it acknowledges
        let (mut r, mut w) = (reno(false), window(4 * MSS, 0));
        r.on_ack(&mut w, &ack(2 * MSS));
        assert_eq!(w.cwnd, 4 * MSS + 250);
        r.on_ack(&mut w, &ack(MSS / 2));
        assert_eq!(w.cwnd, 4 * MSS + 250 + 235, "1e6 / 4250 = 235.3: the fraction carries over");
    }

    #[test]
    fn no_growth_in_fast_recovery_or_when_not_cwnd_limited() {
        let (mut r, mut w) = (reno(true), window(10 * MSS, u64::MAX));
        r.on_ack(&mut w, &Ack { recovery: Recovery::Fast { recover: 0 }, ..ack(MSS) });
        r.on_ack(&mut w, &Ack { cwnd_limited: false, ..ack(MSS) });
        assert_eq!(w.cwnd, 10 * MSS);
        // after a timeout (Loss) growth is slow start again
        r.on_ack(&mut w, &Ack { recovery: Recovery::Loss { recover: 0 }, ..ack(MSS) });
        assert_eq!(w.cwnd, 11 * MSS);
    }

    #[test]
    fn ece_halves_flight_size_only_with_ecn() {
        let mut w = Window { cwnd: 20 * MSS, ssthresh: u64::MAX, mss: MSS, flight: 12 * MSS };
        assert!(!reno(true).on_ece(&mut w));
        assert_eq!(w.cwnd, 20 * MSS);
        let mut r = NewReno::new(&TcpConfig { ecn: true, mss: MSS as u32, ..TcpConfig::default() });
        assert!(r.on_ece(&mut w));
        assert_eq!((w.cwnd, w.ssthresh), (6 * MSS, 6 * MSS));
    }

    #[test]
    fn a_timeout_restarts_congestion_avoidance_counting() {
        let (mut r, mut w) = (reno(true), window(10 * MSS, 0));
        r.on_ack(&mut w, &ack(9 * MSS));
        r.on_timeout(&mut w, Recovery::Open, 0);
        assert_eq!((w.cwnd, w.ssthresh), (MSS, 5 * MSS));
        w.ssthresh = 0;
        r.on_ack(&mut w, &ack(MSS / 2));
        assert_eq!(w.cwnd, MSS, "the 9 MSS acked before the timeout are forgotten");
        r.on_ack(&mut w, &ack(MSS / 2));
        assert_eq!(w.cwnd, 2 * MSS);
    }
}
