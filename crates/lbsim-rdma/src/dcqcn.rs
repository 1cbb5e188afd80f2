//! DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale
//! RDMA Deployments", SIGCOMM'15, §3.1, Fig. 6) in the form ConnectX NICs
//! implement and the HPCC simulator models (`RdmaHw::*Mlx`):
//!
//! - a CNP sets two flags; the first CNP of a flow only sets α = 1 and
//!   starts the timers (no cut);
//! - every `alpha_interval` α ← (1−g)α + g if a CNP came since the last
//!   update, else (1−g)α;
//! - every `decrease_interval` (phase: the first CNP, plus 1 ns so it runs
//!   after the α update of the same instant), if a CNP came since the last
//!   check: the target takes the current rate when clamping or after an
//!   increase, the current rate is cut to max(min_rate, Rc·(1−α/2)), the
//!   stage resets and the increase timer restarts;
//! - every `increase_interval` after the last cut: fast recovery
//!   (Rc ← (Rc+Rt)/2) for F steps, then additive (Rt += R_AI) and then
//!   hyper increase (Rt += R_HAI), each followed by Rc ← (Rc+Rt)/2.
//!
//! The paper's NP paces CNPs (one per 50 µs); the reference flags every
//! ACK of a CE-marked packet instead (`QpReceiver`), and there is no byte
//! counter (docs/rdma.md lists these departures).
//!
//! The timers are evaluated lazily: α is brought up to date (its ticks
//! since the last update applied at once) when a CNP or a cut reads it; a
//! decrease check is an event only when a CNP is pending; the increase
//! timer stops once both rates are at line rate. The results are those of
//! ticking every interval.

use crate::config::DcqcnConfig;
use lbsim_engine::{BitsPerSec, SimTime};

/// One QP's DCQCN state.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    /// Rc, the current rate the NIC paces at.
    rc: BitsPerSec,
    /// Rt, the target rate.
    rt: BitsPerSec,
    line: BitsPerSec,
    alpha: f64,
    /// The first CNP's arrival: the phase of the α and decrease timers
    /// (none until then: nothing runs before the first CNP).
    first: Option<SimTime>,
    /// α updates applied: update j is due at first + j·alpha_interval.
    alpha_ticks: u64,
    /// A CNP arrived since the last α update / decrease check.
    alpha_cnp: bool,
    dec_cnp: bool,
    /// Increase steps since the last cut (the paper's i).
    stage: u32,
    /// The next decrease check that will act (a CNP is pending).
    dec_due: Option<SimTime>,
    /// The next increase step.
    inc_due: Option<SimTime>,
    /// Rate cuts so far.
    pub cuts: u64,
}

impl Dcqcn {
    /// A new QP at line rate (no slow start: RDMA NICs start at line rate).
    pub fn new(line: BitsPerSec) -> Dcqcn {
        Dcqcn {
            rc: line,
            rt: line,
            line,
            alpha: 1.0,
            first: None,
            alpha_ticks: 0,
            alpha_cnp: false,
            dec_cnp: false,
            stage: 0,
            dec_due: None,
            inc_due: None,
            cuts: 0,
        }
    }

    /// The current rate.
    #[inline]
    pub fn rate(&self) -> BitsPerSec {
        self.rc
    }

    pub fn target(&self) -> BitsPerSec {
        self.rt
    }

    /// α as of the last update applied (see [`Dcqcn::alpha_at`]).
    pub fn alpha_at(&mut self, now: SimTime, cfg: &DcqcnConfig) -> f64 {
        self.advance_alpha(now, cfg);
        self.alpha
    }

    /// The ACK of a CE-marked packet (a CNP) reached the sender.
    pub fn on_cnp(&mut self, now: SimTime, cfg: &DcqcnConfig) {
        self.advance_alpha(now, cfg);
        self.alpha_cnp = true;
        self.dec_cnp = true;
        let first = match self.first {
            Some(f) => f,
            None => {
                self.first = Some(now);
                self.alpha = 1.0;
                self.alpha_cnp = false;
                self.rc = BitsPerSec((self.rc.0 as f64 * cfg.rate_on_first_cnp) as u64);
                self.rt = self.rc;
                now
            }
        };
        if self.dec_due.is_none() {
            // the first check after now: first + 1 ns + k·interval, k >= 1
            let base = first + SimTime::from_ns(1);
            let d = cfg.decrease_interval.0;
            let k = if now >= base { (now - base).0 / d + 1 } else { 1 };
            self.dec_due = Some(SimTime(base.0 + k * d));
        }
    }

    /// When [`Dcqcn::on_timer`] next has work (`None`: no timer runs).
    #[inline]
    pub fn next_due(&self) -> Option<SimTime> {
        match (self.dec_due, self.inc_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the decrease checks and increase steps due by `now`, in time
    /// order; true if the rate changed.
    pub fn on_timer(&mut self, now: SimTime, cfg: &DcqcnConfig) -> bool {
        let before = self.rc;
        while let Some(t) = self.next_due().filter(|&t| t <= now) {
            if self.dec_due == Some(t) {
                self.decrease(t, cfg);
            } else {
                self.increase(t, cfg);
            }
        }
        self.rc != before
    }

    fn decrease(&mut self, t: SimTime, cfg: &DcqcnConfig) {
        self.advance_alpha(t, cfg);
        debug_assert!(self.dec_cnp);
        if cfg.clamp_target || self.stage != 0 {
            self.rt = self.rc;
        }
        let cut = (self.rc.0 as f64 * (1.0 - self.alpha / 2.0)) as u64;
        self.rc = BitsPerSec(cut.max(cfg.min_rate.0));
        self.stage = 0;
        self.dec_cnp = false;
        self.dec_due = None;
        self.inc_due = Some(t + cfg.increase_interval);
        self.cuts += 1;
    }

    fn increase(&mut self, t: SimTime, cfg: &DcqcnConfig) {
        let (rc0, rt0) = (self.rc, self.rt);
        if self.stage > cfg.fast_recovery_steps {
            self.rt = BitsPerSec((self.rt.0 + cfg.rate_hai.0).min(self.line.0));
        } else if self.stage == cfg.fast_recovery_steps {
            self.rt = BitsPerSec((self.rt.0 + cfg.rate_ai.0).min(self.line.0));
        }
        self.rc = BitsPerSec(self.rc.0 / 2 + self.rt.0 / 2);
        self.stage = self.stage.saturating_add(1);
        // at line rate with nothing left to grow, further steps change
        // nothing: the timer stops (a cut restarts it)
        let settled = self.rc == rc0 && self.rt == rt0 && self.rt == self.line;
        self.inc_due = if settled { None } else { Some(t + cfg.increase_interval) };
    }

    /// Applies the α updates due by `now`: the first after a CNP adds g,
    /// the others only decay.
    fn advance_alpha(&mut self, now: SimTime, cfg: &DcqcnConfig) {
        let Some(first) = self.first else { return };
        let due = (now - first).0 / cfg.alpha_interval.0;
        if due <= self.alpha_ticks {
            return;
        }
        let mut n = due - self.alpha_ticks;
        self.alpha_ticks = due;
        let keep = 1.0 - cfg.g;
        if self.alpha_cnp {
            self.alpha = keep * self.alpha + cfg.g;
            self.alpha_cnp = false;
            n -= 1;
        }
        if n <= 64 {
            for _ in 0..n {
                self.alpha *= keep;
            }
        } else {
            self.alpha *= keep.powi(n.min(i32::MAX as u64) as i32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DcqcnConfig {
        DcqcnConfig::connectx(BitsPerSec::gbps(100))
    }

    /// The same rules ticked every interval, as the reference schedules
    /// them: the lazy machine must match it exactly.
    struct Ticked {
        rc: u64,
        rt: u64,
        alpha: f64,
        alpha_cnp: bool,
        dec_cnp: bool,
        stage: u32,
        first: Option<u64>,
        inc_next: Option<u64>,
    }

    impl Ticked {
        fn run(cnps: &[u64], until: u64, c: &DcqcnConfig) -> Vec<(u64, u64)> {
            let line = 100_000_000_000u64;
            let mut s = Ticked { rc: line, rt: line, alpha: 1.0, alpha_cnp: false, dec_cnp: false, stage: 0, first: None, inc_next: None };
            let (a, d, inc) = (c.alpha_interval.0, c.decrease_interval.0, c.increase_interval.0);
            let mut out = vec![];
            // step through every picosecond event in time order (events are
            // on ns multiples: step by 1 ns)
            let mut ci = 0;
            let mut t = 0u64;
            while t <= until {
                if let Some(f) = s.first {
                    if t > f && (t - f).is_multiple_of(a) {
                        s.alpha = if s.alpha_cnp { (1.0 - c.g) * s.alpha + c.g } else { (1.0 - c.g) * s.alpha };
                        s.alpha_cnp = false;
                    }
                }
                while ci < cnps.len() && cnps[ci] == t {
                    s.alpha_cnp = true;
                    s.dec_cnp = true;
                    if s.first.is_none() {
                        s.first = Some(t);
                        s.alpha = 1.0;
                        s.alpha_cnp = false;
                    }
                    ci += 1;
                }
                if let Some(f) = s.first {
                    if t > f + 1000 && (t - f - 1000).is_multiple_of(d) && s.dec_cnp {
                        if s.stage != 0 {
                            s.rt = s.rc;
                        }
                        s.rc = ((s.rc as f64 * (1.0 - s.alpha / 2.0)) as u64).max(c.min_rate.0);
                        s.stage = 0;
                        s.dec_cnp = false;
                        s.inc_next = Some(t + inc);
                        out.push((t, s.rc));
                    }
                }
                if s.inc_next == Some(t) {
                    s.inc_next = Some(t + inc);
                    if s.stage > c.fast_recovery_steps {
                        s.rt = (s.rt + c.rate_hai.0).min(line);
                    } else if s.stage == c.fast_recovery_steps {
                        s.rt = (s.rt + c.rate_ai.0).min(line);
                    }
                    let before = s.rc;
                    s.rc = s.rc / 2 + s.rt / 2;
                    s.stage += 1;
                    if s.rc != before {
                        out.push((t, s.rc));
                    }
                }
                t += 1000;
            }
            out
        }
    }

    fn lazy(cnps: &[u64], until: u64, c: &DcqcnConfig) -> Vec<(u64, u64)> {
        let mut q = Dcqcn::new(BitsPerSec::gbps(100));
        let mut out = vec![];
        let mut i = 0;
        loop {
            let next_cnp = cnps.get(i).copied();
            let next_t = q.next_due().map(|t| t.0);
            match (next_cnp, next_t) {
                (Some(a), Some(b)) if b < a => {
                    let before = q.rate();
                    q.on_timer(SimTime(b), c);
                    if q.rate() != before {
                        out.push((b, q.rate().0));
                    }
                }
                (Some(a), _) => {
                    q.on_cnp(SimTime(a), c);
                    i += 1;
                }
                (None, Some(b)) if b <= until => {
                    let before = q.rate();
                    q.on_timer(SimTime(b), c);
                    if q.rate() != before {
                        out.push((b, q.rate().0));
                    }
                }
                _ => break,
            }
        }
        out
    }

    #[test]
    fn lazy_timers_match_ticking_every_interval() {
        let c = cfg();
        // CNPs (on ns, off the tick grid) in bursts with gaps long enough
        // for fast recovery, additive and hyper increase to run
        let mut cnps = vec![];
        let mut t = 5_000_000u64 + 137_000;
        for burst in 0..6u64 {
            for k in 0..(3 + burst * 5) {
                cnps.push(t + k * 2_300_000);
            }
            t += 900_000_000 + burst * 350_000_000;
        }
        let until = t + 3_000_000_000;
        let a = Ticked::run(&cnps, until, &c);
        let b = lazy(&cnps, until, &c);
        assert!(a.len() > 40, "{}", a.len());
        assert_eq!(a, b);
    }

    #[test]
    fn first_cnp_does_not_cut_and_a_second_halves_near_alpha_one() {
        let c = cfg();
        let mut q = Dcqcn::new(BitsPerSec::gbps(100));
        q.on_cnp(SimTime::from_us(10), &c);
        assert_eq!(q.rate(), BitsPerSec::gbps(100));
        // the first CNP sets the decrease flag: the check 4 µs + 1 ns later
        // cuts with α decayed by four updates
        assert_eq!(q.next_due(), Some(SimTime::from_ns(14_001)));
        assert!(q.on_timer(SimTime::from_ns(14_001), &c));
        let alpha = (1.0 - c.g).powi(4);
        assert_eq!(q.rate().0, (100e9 * (1.0 - alpha / 2.0)) as u64);
        assert_eq!(q.cuts, 1);
        // no more CNPs: 300 µs later fast recovery halves the distance to
        // the target (still line rate: clamping is off)
        assert_eq!(q.next_due(), Some(SimTime::from_ns(314_001)));
        let rc = q.rate().0;
        q.on_timer(SimTime::from_ns(314_001), &c);
        assert_eq!(q.rate().0, rc / 2 + 100_000_000_000 / 2);
    }

    #[test]
    fn marks_every_check_drive_the_rate_to_the_floor_and_it_recovers() {
        let c = cfg();
        let mut q = Dcqcn::new(BitsPerSec::gbps(100));
        let mut t = SimTime::from_us(1);
        for _ in 0..200 {
            q.on_cnp(t, &c);
            t += SimTime::from_us(2);
            q.on_timer(t, &c);
        }
        assert_eq!(q.rate(), c.min_rate);
        // then silence: the increase timer brings it back to line rate and
        // stops
        let mut steps = 0;
        while let Some(d) = q.next_due() {
            q.on_timer(d, &c);
            steps += 1;
            assert!(steps < 10_000);
        }
        // (halving both and adding truncates: it settles 1 b/s below)
        assert!(q.rate().0 >= 100_000_000_000 - 1, "{:?}", q.rate());
        // cuts without an increase between them leave the target at line
        // rate (no clamping), so fast recovery halves the distance to it
        // each step: log2(99 Gb/s) ≈ 37 steps, then one that changes nothing
        assert!((35..45).contains(&steps), "{steps}");
    }
}
