//! Retransmission timer computation, RFC 6298 §2, in integer picoseconds.

use lbsim_engine::SimTime;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: u64,
    rttvar: u64,
    has_sample: bool,
    rto: SimTime,
    min_rto: SimTime,
    max_rto: SimTime,
}

impl RttEstimator {
    pub fn new(initial_rto: SimTime, min_rto: SimTime, max_rto: SimTime) -> Self {
        RttEstimator { srtt: 0, rttvar: 0, has_sample: false, rto: initial_rto, min_rto, max_rto }
    }

    /// Feeds one RTT measurement R (RFC 6298 2.2 / 2.3).
    pub fn sample(&mut self, r: SimTime) {
        let r = r.0;
        if !self.has_sample {
            // (2.2) SRTT <- R, RTTVAR <- R/2
            self.srtt = r;
            self.rttvar = r / 2;
            self.has_sample = true;
        } else {
            // (2.3) RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'
            let diff = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + diff) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
        }
        // RTO <- SRTT + max(G, K*RTTVAR) with K = 4 and G -> 0 (a picosecond clock),
        // then (2.4) the lower bound and (2.5) the upper bound.
        let rto = self.srtt + (4 * self.rttvar).max(1);
        self.rto = SimTime(rto).max(self.min_rto).min(self.max_rto);
    }

    /// The current RTO before backoff.
    pub fn rto(&self) -> SimTime {
        self.rto
    }
    /// Smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<SimTime> {
        self.has_sample.then_some(SimTime(self.srtt))
    }
    pub fn max_rto(&self) -> SimTime {
        self.max_rto
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_and_smoothing_follow_rfc6298() {
        let mut e = RttEstimator::new(SimTime::from_ms(10), SimTime::from_us(1), SimTime::from_ms(60_000));
        assert_eq!(e.rto(), SimTime::from_ms(10));
        e.sample(SimTime::from_us(100));
        // srtt 100, rttvar 50 -> rto 300 us
        assert_eq!(e.srtt(), Some(SimTime::from_us(100)));
        assert_eq!(e.rto(), SimTime::from_us(300));
        e.sample(SimTime::from_us(100));
        // rttvar = 3/4*50 = 37.5 us; srtt = 100 -> rto 250 us
        assert_eq!(e.rto(), SimTime::from_us(250));
    }

    #[test]
    fn min_rto_bounds_from_below() {
        let mut e = RttEstimator::new(SimTime::from_ms(10), SimTime::from_ms(10), SimTime::from_ms(60_000));
        e.sample(SimTime::from_us(20));
        assert_eq!(e.rto(), SimTime::from_ms(10));
    }
}
