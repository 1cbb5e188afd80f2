//! DCTCP (RFC 8257): the sender estimates the fraction of its data that met
//! congestion from ECN-Echo, α ← (1 − g)·α + g·F once per window of data
//! (§3.3), and on ECN-Echo cuts cwnd ← cwnd·(1 − α/2) at most once per
//! window (the sender enforces the once, as for RFC 3168). Growth and the
//! response to loss are NewReno's (§3.4, §3.5).

use super::{Ack, Congestion, Lia, NewReno, Window};
use crate::sender::Recovery;

#[derive(Clone, Debug)]
pub struct Dctcp {
    reno: NewReno,
    /// EWMA gain g.
    g: f64,
    alpha: f64,
    /// Bytes acknowledged, and those with ECE, in the current window.
    acked: u64,
    marked: u64,
    /// The window ends when snd.una reaches this (0: nothing sent yet).
    window_end: u64,
}

impl Dctcp {
    /// α starts at 1 (§3.3 "initialized to 1"): the first cut halves.
    pub fn new(reno: NewReno, g: f64) -> Dctcp {
        Dctcp { reno, g, alpha: 1.0, acked: 0, marked: 0, window_end: 0 }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// §3.3 steps 1–3 and 6–7: count the bytes acknowledged and marked;
    /// once snd.una passes the window's end, fold the marked fraction into
    /// α and start a window ending at snd.max.
    fn account(&mut self, ack: &Ack) {
        self.acked += ack.acked;
        if ack.ece {
            self.marked += ack.acked;
        }
        if ack.snd_una >= self.window_end {
            let f = if self.acked > 0 { self.marked as f64 / self.acked as f64 } else { 0.0 };
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            self.acked = 0;
            self.marked = 0;
            self.window_end = ack.snd_max.max(ack.snd_una + 1);
        }
    }
}

impl Congestion for Dctcp {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, ack: &Ack) {
        self.account(ack);
        self.reno.on_ack(w, ack);
    }

    #[inline]
    fn on_send(&mut self, snd_max: u64) {
        if self.window_end == 0 {
            self.window_end = snd_max;
        }
    }

    /// §3.3 step 8 (and §3.4's ssthresh): cwnd ← max(cwnd·(1 − α/2), MSS),
    /// ssthresh ← max(cwnd, 2·MSS).
    fn on_ece(&mut self, w: &mut Window) -> bool {
        w.cwnd = ((w.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64).max(w.mss);
        w.ssthresh = w.cwnd.max(2 * w.mss);
        true
    }

    fn on_fast_recovery(&mut self, w: &mut Window, pipe: u64) {
        self.reno.on_fast_recovery(w, pipe);
    }

    fn on_recovery_exit(&mut self, w: &mut Window) {
        self.reno.on_recovery_exit(w);
    }

    fn on_timeout(&mut self, w: &mut Window, recovery: Recovery, pipe: u64) {
        self.reno.on_timeout(w, recovery, pipe);
    }

    fn set_coupling(&mut self, lia: Lia) {
        self.reno.set_coupling(lia);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TcpConfig;

    const MSS: u64 = 1000;

    fn dctcp(g: f64) -> Dctcp {
        Dctcp::new(NewReno::new(&TcpConfig { mss: MSS as u32, ..TcpConfig::default() }), g)
    }

    fn ack(acked: u64, ece: bool, snd_una: u64, snd_max: u64) -> Ack {
        Ack { acked, ece, snd_una, snd_max, recovery: Recovery::Open, cwnd_limited: false }
    }

    #[test]
    fn alpha_folds_the_marked_fraction_once_per_window() {
        let mut d = dctcp(0.5);
        let mut w = Window { cwnd: 4 * MSS, ssthresh: u64::MAX, mss: MSS, flight: 0 };
        d.on_send(MSS);
        d.on_send(2 * MSS); // the first window ends with the first segment
                            // first ACK ends the first window: F = 1 (marked), α = 0.5·1 + 0.5·1
        d.on_ack(&mut w, &ack(MSS, true, MSS, 4 * MSS));
        assert_eq!(d.alpha(), 1.0);
        // next window [MSS, 4·MSS): one of three MSS marked
        d.on_ack(&mut w, &ack(MSS, false, 2 * MSS, 4 * MSS));
        d.on_ack(&mut w, &ack(MSS, true, 3 * MSS, 4 * MSS));
        assert_eq!(d.alpha(), 1.0, "unchanged inside the window");
        d.on_ack(&mut w, &ack(MSS, false, 4 * MSS, 6 * MSS));
        // α = (1 − g)·1 + g·(1/3)
        assert!((d.alpha() - (0.5 + 0.5 / 3.0)).abs() < 1e-12, "{}", d.alpha());
        assert_eq!(w.cwnd, 4 * MSS, "not cwnd-limited: no growth");
    }

    #[test]
    fn the_cut_is_alpha_over_two_of_cwnd() {
        let mut d = dctcp(1.0 / 16.0);
        let mut w = Window { cwnd: 40 * MSS, ssthresh: u64::MAX, mss: MSS, flight: 40 * MSS };
        // α = 1 at the start: halve
        assert!(d.on_ece(&mut w));
        assert_eq!((w.cwnd, w.ssthresh), (20 * MSS, 20 * MSS));
        // α = 1/4: cwnd·(1 − 1/8)
        d.alpha = 0.25;
        assert!(d.on_ece(&mut w));
        assert_eq!((w.cwnd, w.ssthresh), (17_500, 17_500));
        // floors: cwnd ≥ MSS, ssthresh ≥ 2·MSS
        let mut w = Window { cwnd: MSS, ssthresh: u64::MAX, mss: MSS, flight: MSS };
        d.alpha = 1.0;
        d.on_ece(&mut w);
        assert_eq!((w.cwnd, w.ssthresh), (MSS, 2 * MSS));
    }

    #[test]
    fn loss_response_is_newreno() {
        let mut d = dctcp(1.0 / 16.0);
        let mut w = Window { cwnd: 40 * MSS, ssthresh: u64::MAX, mss: MSS, flight: 30 * MSS };
        d.on_fast_recovery(&mut w, 0);
        assert_eq!(w.ssthresh, 15 * MSS);
        d.on_timeout(&mut w, Recovery::Open, 0);
        assert_eq!((w.ssthresh, w.cwnd), (15 * MSS, MSS));
    }
}
