//! Typed time and units (after htsim's `simtime_picosec` and smoltcp's typed
//! `Instant`/`Duration`).
//!
//! The clock is an integer count of picoseconds: a 10 Gb/s link serialises one
//! bit in exactly 100 ps, so every rate that is a whole number of Mb/s gives
//! integer bit times and no float error ever accumulates in the event order.
//! Seconds, microseconds and `f64` appear only at the edges (parsing scenario
//! files, printing results).

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// A point in simulated time, or a duration, in picoseconds.
///
/// `u64` picoseconds covers 213 days of simulated time.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000_000)
    }
    /// Converts a (non-negative, finite) number of microseconds, rounding to
    /// the nearest picosecond. For scenario parsing only.
    pub fn from_us_f64(us: f64) -> Self {
        debug_assert!(us.is_finite() && us >= 0.0);
        SimTime((us * 1e6).round() as u64)
    }
    /// The longest duration a user may give any single time input: one
    /// day. Sums of a run's inputs then stay far below the clock's 213 days,
    /// so time arithmetic cannot wrap.
    pub const MAX_INPUT: SimTime = SimTime(86_400 * 1_000_000_000_000);

    /// Checked conversion of a user-given duration in microseconds: finite,
    /// at most [`SimTime::MAX_INPUT`], and (with `positive`) at least 1 ps
    /// *after* rounding. The error says why in words.
    pub fn input_us(us: f64, positive: bool) -> Result<SimTime, String> {
        Self::input(us, 1e6, "us", positive)
    }

    /// [`SimTime::input_us`] for a value in any unit (`ps_per_unit`
    /// picoseconds per `unit`), with the error in that unit.
    pub fn input(x: f64, ps_per_unit: f64, unit: &str, positive: bool) -> Result<SimTime, String> {
        if !x.is_finite() || x < 0.0 || (positive && x <= 0.0) {
            return Err(format!("must be a {} number of {unit}, got {}", if positive { "positive" } else { "non-negative" }, fmt_num(x)));
        }
        let ps = x * ps_per_unit;
        if ps > Self::MAX_INPUT.0 as f64 {
            return Err(format!("{} {unit} is longer than the 1-day limit on any time input", fmt_num(x)));
        }
        let t = SimTime(ps.round() as u64);
        if positive && t == SimTime::ZERO {
            return Err(format!("{} {unit} rounds to 0 at the clock's 1 ps resolution", fmt_num(x)));
        }
        Ok(t)
    }

    pub fn from_secs_f64(s: f64) -> Self {
        debug_assert!(s.is_finite() && s >= 0.0);
        SimTime((s * 1e12).round() as u64)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    // Division (not multiplication by 1e-x) so whole values convert exactly:
    // 30 ms is 30.0, not 30.000000000000004.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn saturating_sub(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(o.0))
    }
    /// `self * num / den`, exact in 128-bit arithmetic, rounded down.
    pub fn mul_div(self, num: u64, den: u64) -> SimTime {
        SimTime((self.0 as u128 * num as u128 / den as u128) as u64)
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0 + o.0)
    }
}
impl AddAssign for SimTime {
    fn add_assign(&mut self, o: SimTime) {
        self.0 += o.0;
    }
}
impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, o: SimTime) -> SimTime {
        debug_assert!(self.0 >= o.0, "negative SimTime: {} - {}", self.0, o.0);
        SimTime(self.0 - o.0)
    }
}
impl SubAssign for SimTime {
    fn sub_assign(&mut self, o: SimTime) {
        self.0 -= o.0;
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self)
    }
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= 1_000_000_000 {
            write!(f, "{:.6}ms", ps as f64 * 1e-9)
        } else if ps >= 1_000_000 {
            write!(f, "{:.3}us", ps as f64 * 1e-6)
        } else {
            write!(f, "{}ps", ps)
        }
    }
}

/// A user-given number for an error message: plain when moderate,
/// scientific when tiny or huge (never 300 digits).
pub fn fmt_num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e9).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A byte count (packet sizes, flow sizes, buffer limits).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Bytes(pub u64);

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, o: Bytes) -> Bytes {
        Bytes(self.0 - o.0)
    }
}

/// A link rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    pub const fn gbps(g: u64) -> Self {
        BitsPerSec(g * 1_000_000_000)
    }
    pub fn from_gbps_f64(g: f64) -> Self {
        BitsPerSec((g * 1e9).round() as u64)
    }
    /// Checked conversion of a user-given rate in Gb/s: from 1 Mb/s (a
    /// 1500-byte packet then takes 12 ms) to 100 Tb/s, checked after
    /// rounding to whole bits per second.
    pub fn input_gbps(g: f64) -> Result<BitsPerSec, String> {
        if !g.is_finite() || g <= 0.0 {
            return Err(format!("must be a positive rate in Gb/s, got {}", fmt_num(g)));
        }
        let r = BitsPerSec::from_gbps_f64(g);
        if r.0 < 1_000_000 {
            return Err(format!("{} Gb/s is below the 1 Mb/s minimum", fmt_num(g)));
        }
        if r.0 > 100_000 * 1_000_000_000 {
            return Err(format!("{} Gb/s is above the 100 Tb/s maximum", fmt_num(g)));
        }
        Ok(r)
    }
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time to serialise `bytes` at this rate, rounded *up* to the next
    /// picosecond, so a port is never considered free before its last bit left.
    pub fn tx_time(self, bytes: Bytes) -> SimTime {
        debug_assert!(self.0 > 0, "zero-rate link");
        let num = bytes.0 as u128 * 8 * 1_000_000_000_000u128;
        let r = self.0 as u128;
        SimTime(num.div_ceil(r) as u64)
    }
    /// Bytes that this rate carries in `t` (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (self.0 as u128 * t.0 as u128 / 8_000_000_000_000u128) as u64
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Gbps", self.as_gbps_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_times_and_rates_are_checked_after_rounding() {
        assert_eq!(SimTime::input_us(1.5, true), Ok(SimTime::from_ns(1500)));
        assert_eq!(SimTime::input_us(0.0, false), Ok(SimTime::ZERO));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-7, 1e30, 8.65e10] {
            assert!(SimTime::input_us(bad, true).is_err(), "{bad}");
        }
        assert!(SimTime::input_us(8.64e10, true).is_ok(), "exactly one day");
        assert_eq!(BitsPerSec::input_gbps(10.0), Ok(BitsPerSec::gbps(10)));
        for bad in [0.0, -10.0, f64::NAN, 1e-10, 1e-4, 1e6] {
            assert!(BitsPerSec::input_gbps(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serialization_is_exact_for_whole_gigabit_rates() {
        // 1500 B at 10 Gb/s = 1.2 us exactly; at 40 Gb/s = 300 ns exactly.
        assert_eq!(BitsPerSec::gbps(10).tx_time(Bytes(1500)), SimTime::from_ns(1200));
        assert_eq!(BitsPerSec::gbps(40).tx_time(Bytes(1500)), SimTime::from_ns(300));
    }

    #[test]
    fn serialization_rounds_up() {
        // 1 byte at 3 b/s = 8/3 s: must round up, never down.
        let t = BitsPerSec(3).tx_time(Bytes(1));
        assert_eq!(t.0, 2_666_666_666_667);
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = BitsPerSec::gbps(10);
        assert_eq!(r.bytes_in(SimTime::from_ms(1)), 1_250_000);
        assert_eq!(r.bytes_in(r.tx_time(Bytes(1500))), 1500);
    }

    #[test]
    fn float_edges_round_to_nearest() {
        assert_eq!(SimTime::from_us_f64(1.5), SimTime::from_ns(1500));
        assert_eq!(SimTime::from_secs_f64(0.001), SimTime::from_ms(1));
        assert_eq!(SimTime::from_ms(3).as_ms_f64(), 3.0);
        for ms in 1..1000 {
            assert_eq!(SimTime::from_ms(ms).as_ms_f64(), ms as f64);
            assert_eq!(SimTime::from_us(ms).as_us_f64(), ms as f64);
        }
    }
}
