//! Discounting Rate Estimator (CONGA §3.2): a register X incremented by
//! each packet's bytes on transmit and multiplied by (1 − α) every T_dre, so
//! X ≈ R·τ for a rate R, with τ = T_dre/α. The congestion metric is
//! X / (C·τ) quantised to Q bits, saturating at 2^Q − 1.
//!
//! The periodic decay is applied lazily: the register remembers the last
//! tick it was decayed to (ticks at multiples of T_dre from time 0) and
//! catches up on the next access, which is exactly the periodic behaviour
//! without a timer per port.

use lbsim_engine::SimTime;

#[derive(Clone, Copy, Debug)]
pub struct DreParams {
    pub t_dre: SimTime,
    pub alpha: f64,
    pub q_bits: u8,
}

impl DreParams {
    /// From a scheme's parameters `dre_period_us` (T_dre), `tau_us` and
    /// `q_bits` (an integer from 1 to `max_q`; `why` says what bounds it).
    pub fn from_params(p: &crate::Params, max_q: u8, why: &str) -> Result<DreParams, crate::ParamError> {
        let err = |key: &str, msg: String| crate::ParamError { key: key.into(), msg };
        let tau = p.duration("tau_us", false)?.as_us_f64();
        let period = p.duration("dre_period_us", false)?.as_us_f64();
        if period > tau {
            return Err(err("dre_period_us", format!("must not exceed tau_us ({tau})")));
        }
        let q = p.positive("q_bits")?;
        if q > max_q as f64 || q.fract() != 0.0 {
            return Err(err("q_bits", format!("must be an integer from 1 to {max_q}{why}, got {q}")));
        }
        Ok(DreParams { t_dre: SimTime::from_us_f64(period), alpha: period / tau, q_bits: q as u8 })
    }

    /// τ = T_dre / α.
    pub fn tau(&self) -> SimTime {
        SimTime((self.t_dre.0 as f64 / self.alpha).round() as u64)
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Dre {
    x: f64,
    tick: u64,
}

impl Dre {
    fn catch_up(&mut self, p: &DreParams, now: SimTime) {
        let t = now.0 / p.t_dre.0;
        if t > self.tick {
            let k = (t - self.tick).min(10_000) as i32;
            self.x *= (1.0 - p.alpha).powi(k);
            if self.x < 1e-3 {
                self.x = 0.0;
            }
            self.tick = t;
        }
    }

    /// A packet of `bytes` sent at `now`.
    pub fn add(&mut self, p: &DreParams, now: SimTime, bytes: u64) {
        self.catch_up(p, now);
        self.x += bytes as f64;
    }

    /// The register value (bytes) at `now`.
    pub fn value(&mut self, p: &DreParams, now: SimTime) -> f64 {
        self.catch_up(p, now);
        self.x
    }

    /// Utilisation estimate X / (C·τ) at `now` (1.0 = line rate).
    pub fn utilisation(&mut self, p: &DreParams, now: SimTime, rate_bps: u64) -> f64 {
        let cap = rate_bps as f64 / 8.0 * p.tau().as_secs_f64();
        self.value(p, now) / cap
    }

    /// The Q-bit congestion metric at `now`.
    pub fn metric(&mut self, p: &DreParams, now: SimTime, rate_bps: u64) -> u8 {
        quantise(self.utilisation(p, now, rate_bps), p.q_bits)
    }
}

/// floor(u · 2^Q), saturating at 2^Q − 1.
pub fn quantise(u: f64, q_bits: u8) -> u8 {
    let levels = 1u32 << q_bits;
    ((u * levels as f64).floor().max(0.0) as u32).min(levels - 1) as u8
}

/// CONGA §3.3 metric aging, shared by every scheme that keeps remote path
/// metrics: a metric `elapsed` after its last update is halved once for
/// every whole `age` period (so it starts decaying after `age` and reaches 0
/// eventually, which guarantees a path that looked congested is tried again).
pub fn aged(value: u32, elapsed: SimTime, age: SimTime) -> u32 {
    let periods = elapsed.0 / age.0.max(1);
    value.checked_shr(periods.min(32) as u32).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aged_metric_halves_per_whole_period() {
        let age = SimTime::from_us(10_000);
        assert_eq!(aged(200, SimTime::from_us(9_999), age), 200);
        assert_eq!(aged(200, SimTime::from_us(10_000), age), 100);
        assert_eq!(aged(200, SimTime::from_us(35_000), age), 25);
        assert_eq!(aged(200, SimTime::from_us(10_000_000), age), 0);
    }

    fn params() -> DreParams {
        DreParams { t_dre: SimTime::from_us(5), alpha: 1.0 / 32.0, q_bits: 3 }
    }

    #[test]
    fn constant_rate_settles_within_5_percent_of_rate_times_tau() {
        // 1500-byte packets at 4 Gb/s (>> tau = 160 us), X read at many instants
        let p = params();
        assert_eq!(p.tau(), SimTime::from_us(160));
        let mut d = Dre::default();
        let gap = SimTime::from_ns(3000); // 1500 B / 4 Gb/s
        let expect = 4e9 / 8.0 * 160e-6; // R * tau = 80,000 bytes
        let mut t = SimTime::ZERO;
        let mut worst: f64 = 0.0;
        while t < SimTime::from_ms(3) {
            d.add(&p, t, 1500);
            if t > SimTime::from_ms(1) {
                let x = d.value(&p, t + SimTime::from_ns(1700));
                worst = worst.max((x - expect).abs() / expect);
            }
            t += gap;
        }
        assert!(worst < 0.05, "worst deviation {worst}");
        // at 10G that is 40 % utilisation: metric floor(0.4 * 8) = 3
        let m = d.metric(&p, t, 10_000_000_000);
        assert_eq!(m, 3);
    }

    #[test]
    fn quantisation_saturates() {
        assert_eq!(quantise(0.0, 3), 0);
        assert_eq!(quantise(0.99, 3), 7);
        assert_eq!(quantise(1.7, 3), 7);
        assert_eq!(quantise(0.5, 3), 4);
        assert_eq!(quantise(1.0, 6), 63);
    }

    #[test]
    fn decays_when_idle() {
        let p = params();
        let mut d = Dre::default();
        d.add(&p, SimTime::ZERO, 80_000);
        // 32 ticks later: (31/32)^32 = 0.362
        let v = d.value(&p, SimTime::from_us(160));
        assert!((v - 80_000.0 * (31.0f64 / 32.0).powi(32)).abs() < 1.0, "{v}");
        assert_eq!(d.value(&p, SimTime::from_ms(100)), 0.0);
    }
}
