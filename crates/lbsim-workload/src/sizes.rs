//! Flow-size distributions: an empirical CDF ([`crate::Cdf`]), a Pareto
//! (optionally bounded), or a mixture of named classes, each with its own
//! distribution and share of the flows (VMS §V-E: "large flows with average
//! size 50MB ... small flows with average size 20KB ... subject to a pareto
//! distribution"; AG §VI-C: heavy-tailed sizes of shape α).
//!
//! Every sample is rounded to whole bytes and clamped to at least
//! `min_bytes` (one packet), as [`Cdf::sample`]; means are exact means of
//! that clamped sampler, so offered loads computed from them are exact.
//! A single-class distribution draws one uniform variate per flow (the same
//! stream as before classes existed); a mixture draws the class first.

use crate::cdf::Cdf;
use lbsim_engine::Rng;

/// A Pareto distribution of shape `shape` (α) on [`min`, `max`] bytes
/// (`max` = None: unbounded). Bounded: F(x) = (1 − (min/x)^α) / (1 − (min/max)^α).
#[derive(Clone, Debug, PartialEq)]
pub struct Pareto {
    pub shape: f64,
    pub min: f64,
    pub max: Option<f64>,
}

impl Pareto {
    /// Checks the parameters; the message names the offending one
    /// (`shape`, `min_bytes`, `max_bytes`).
    pub fn new(shape: f64, min: f64, max: Option<f64>) -> Result<Pareto, (&'static str, String)> {
        if !(shape.is_finite() && shape > 0.0) {
            return Err(("shape", format!("must be a finite number > 0, got {shape}")));
        }
        if !(min.is_finite() && min >= 1.0) {
            return Err(("min_bytes", format!("must be >= 1 byte, got {min}")));
        }
        match max {
            Some(h) if !(h.is_finite() && h > min) => return Err(("max_bytes", format!("must be finite and above the minimum ({min} B), got {h}"))),
            None if shape <= 1.0 => {
                return Err(("shape", format!("{shape} <= 1: an unbounded Pareto has no finite mean; set max_bytes (a bounded Pareto)")));
            }
            _ => {}
        }
        let p = Pareto { shape, min, max };
        if !p.mean(1).is_finite() {
            return Err(("shape", format!("{shape} with these bounds gives no finite mean")));
        }
        Ok(p)
    }

    /// The Pareto of shape `shape` (and cap `max`) whose mean is `mean`
    /// bytes: the minimum follows (closed form unbounded, bisection bounded).
    pub fn with_mean(shape: f64, mean: f64, max: Option<f64>) -> Result<Pareto, (&'static str, String)> {
        if !(mean.is_finite() && mean >= 1.0) {
            return Err(("mean_bytes", format!("must be >= 1 byte, got {mean}")));
        }
        if let Some(h) = max {
            if !(h.is_finite() && h > mean) {
                return Err(("max_bytes", format!("must be finite and above mean_bytes ({mean} B), got {h}")));
            }
        }
        if !(shape.is_finite() && shape > 0.0) {
            return Err(("shape", format!("must be a finite number > 0, got {shape}")));
        }
        if max.is_none() {
            if shape <= 1.0 {
                return Err(("shape", format!("{shape} <= 1: an unbounded Pareto has no finite mean; set max_bytes (a bounded Pareto)")));
            }
            let min = mean * (shape - 1.0) / shape;
            if min < 1.0 {
                return Err(("mean_bytes", format!("{mean} B with shape {shape} puts the Pareto's minimum below 1 byte ({min:.3} B)")));
            }
            return Pareto::new(shape, min, None);
        }
        // bounded: the mean rises with the minimum, from ~0 to above `mean`
        let (mut lo, mut hi) = (1.0f64, mean);
        let m = |l: f64| Pareto { shape, min: l, max }.mean_above(0.0);
        if m(lo) > mean {
            return Err(("mean_bytes", format!("{mean} B is below the smallest mean this shape and cap allow ({:.0} B with a 1-byte minimum)", m(lo))));
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if m(mid) < mean {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Pareto::new(shape, 0.5 * (lo + hi), max)
    }

    /// 1 − (min/max)^shape, the bounded Pareto's normaliser, without
    /// cancellation for tiny shapes.
    fn norm(&self) -> f64 {
        self.max.map_or(1.0, |h| -(self.shape * (self.min / h).ln()).exp_m1())
    }

    /// The size at quantile `u` in [0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let x = self.min / (1.0 - u * self.norm()).powf(1.0 / self.shape);
        self.max.map_or(x, |h| x.min(h))
    }

    /// P(X < x).
    fn cdf(&self, x: f64) -> f64 {
        if x <= self.min {
            return 0.0;
        }
        if self.max.is_some_and(|h| x >= h) {
            return 1.0;
        }
        (1.0 - (self.min / x).powf(self.shape)) / self.norm()
    }

    /// E[X; X >= a] (the partial expectation above `a`), written with
    /// ratios (min/a)^α <= 1 so that large shapes cannot overflow.
    fn mean_above(&self, a: f64) -> f64 {
        let (l, al) = (self.min, self.shape);
        let a = a.max(l);
        let b = self.max.unwrap_or(f64::INFINITY);
        if a >= b {
            return 0.0;
        }
        let n = self.norm();
        if (al - 1.0).abs() < 1e-12 {
            return l * (b / a).ln() / n;
        }
        // α L^α ∫_a^b x^-α dx = α/(α−1) (a (L/a)^α − b (L/b)^α)
        let term = |x: f64| if x.is_infinite() { 0.0 } else { x * (l / x).powf(al) };
        al / (al - 1.0) * (term(a) - term(b)) / n
    }

    /// Exact mean of the sampler clamped to at least `min_bytes`.
    pub fn mean(&self, min_bytes: u64) -> f64 {
        let m = min_bytes.max(1) as f64;
        m * self.cdf(m) + self.mean_above(m)
    }
}

/// One distribution of flow sizes.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    Cdf(Cdf),
    Pareto(Pareto),
}

impl SizeDist {
    fn sample(&self, rng: &mut Rng, min_bytes: u64) -> u64 {
        match self {
            SizeDist::Cdf(c) => c.sample(rng, min_bytes),
            SizeDist::Pareto(p) => (p.quantile(rng.f64()).round() as u64).max(min_bytes).max(1),
        }
    }
    /// Exact mean of this distribution's clamped sampler.
    pub fn mean(&self, min_bytes: u64) -> f64 {
        match self {
            SizeDist::Cdf(c) => c.mean(min_bytes),
            SizeDist::Pareto(p) => p.mean(min_bytes),
        }
    }
    pub fn name(&self) -> String {
        match self {
            SizeDist::Cdf(c) => c.name.clone(),
            SizeDist::Pareto(p) => match p.max {
                Some(h) => format!("pareto(shape {}, {:.0}-{:.0} B)", p.shape, p.min, h),
                None => format!("pareto(shape {}, min {:.0} B)", p.shape, p.min),
            },
        }
    }
}

/// A named class of flows: its share of the flows (by count) and sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeClass {
    pub name: String,
    pub fraction: f64,
    pub dist: SizeDist,
}

/// The flow sizes of a workload: one class, or a mixture.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizes {
    pub classes: Vec<SizeClass>,
}

impl FlowSizes {
    /// One class named "all".
    pub fn single(dist: SizeDist) -> FlowSizes {
        FlowSizes { classes: vec![SizeClass { name: "all".into(), fraction: 1.0, dist }] }
    }

    /// A size and the index of its class.
    pub fn sample(&self, rng: &mut Rng, min_bytes: u64) -> (u64, u8) {
        if self.classes.len() == 1 {
            return (self.classes[0].dist.sample(rng, min_bytes), 0);
        }
        let u = rng.f64();
        let mut acc = 0.0;
        let mut k = self.classes.len() - 1;
        for (i, c) in self.classes.iter().enumerate() {
            acc += c.fraction;
            if u < acc {
                k = i;
                break;
            }
        }
        (self.classes[k].dist.sample(rng, min_bytes), k as u8)
    }

    /// Exact mean flow size of [`FlowSizes::sample`].
    pub fn mean(&self, min_bytes: u64) -> f64 {
        self.classes.iter().map(|c| c.fraction * c.dist.mean(min_bytes)).sum()
    }

    pub fn name(&self) -> String {
        if self.classes.len() == 1 {
            return self.classes[0].dist.name();
        }
        self.classes.iter().map(|c| format!("{} {}: {}", c.fraction, c.name, c.dist.name())).collect::<Vec<_>>().join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_quantile_inverts_the_cdf_and_respects_the_bounds() {
        for p in [Pareto::new(1.5, 1000.0, None).unwrap(), Pareto::new(1.1, 10_000.0, Some(5e6)).unwrap(), Pareto::new(0.8, 10_000.0, Some(5e6)).unwrap()] {
            assert_eq!(p.quantile(0.0), p.min);
            for u in [0.01, 0.3, 0.5, 0.9, 0.999] {
                let x = p.quantile(u);
                assert!((p.cdf(x) - u).abs() < 1e-9, "{p:?} u {u}: F(Q(u)) = {}", p.cdf(x));
                assert!(x >= p.min && p.max.is_none_or(|h| x <= h));
            }
        }
        // analytic: unbounded median = min · 2^(1/α)
        let p = Pareto::new(1.5, 1000.0, None).unwrap();
        assert!((p.quantile(0.5) - 1000.0 * 2f64.powf(1.0 / 1.5)).abs() < 1e-6);
    }

    #[test]
    fn pareto_means_are_exact_and_sampled_means_converge() {
        // unbounded α = 1.5, mean 20 KB: min = 20,000 / 3
        let p = Pareto::with_mean(1.5, 20_000.0, None).unwrap();
        assert!((p.min - 20_000.0 / 3.0).abs() < 1e-9);
        assert!((p.mean(1) - 20_000.0).abs() < 1e-6);
        // bounded [10 KB, 5 MB], α = 1.5: the closed form
        let b = Pareto::new(1.5, 10_000.0, Some(5e6)).unwrap();
        let (l, h, a) = (10_000f64, 5e6f64, 1.5f64);
        let exact = l.powf(a) / (1.0 - (l / h).powf(a)) * a / (a - 1.0) * (l.powf(1.0 - a) - h.powf(1.0 - a));
        assert!((b.mean(1) - exact).abs() / exact < 1e-12, "{} vs {exact}", b.mean(1));
        // α = 1 (bounded): L·H/(H−L)·ln(H/L)
        let one = Pareto::new(1.0, l, Some(h)).unwrap();
        assert!((one.mean(1) - l * h / (h - l) * (h / l).ln()).abs() < 1e-6);
        // the clamp to one packet raises the mean by exactly the mass below it
        let c = Pareto::new(1.5, 100.0, None).unwrap();
        let m = 1460.0;
        let want = m * (1.0 - (100.0f64 / m).powf(1.5)) + 1.5 * 100f64.powf(1.5) * m.powf(-0.5) / 0.5;
        assert!((c.mean(1460) - want).abs() < 1e-6);
        // bounded with a given mean: bisection finds the minimum
        let q = Pareto::with_mean(1.5, 50e6, Some(1e9)).unwrap();
        assert!((q.mean(1) - 50e6).abs() / 50e6 < 1e-9);
        // sampled mean within 2 % over 400,000 draws (bounded: finite variance)
        let mut rng = Rng::from_seed(7);
        let s = FlowSizes::single(SizeDist::Pareto(b.clone()));
        let n = 400_000;
        let avg = (0..n).map(|_| s.sample(&mut rng, 1).0 as f64).sum::<f64>() / n as f64;
        assert!((avg / b.mean(1) - 1.0).abs() < 0.02, "{avg} vs {}", b.mean(1));
    }

    #[test]
    fn large_and_tiny_shapes_keep_finite_exact_means() {
        // shape 60: the mean is just above the minimum, min * 60/59, with
        // no overflow of min^shape; bounded, the bisection finds it exactly
        let p = Pareto::with_mean(60.0, 1e6, None).unwrap();
        assert!((p.mean(1) - 1e6).abs() < 1e-3, "{}", p.mean(1));
        let q = Pareto::with_mean(60.0, 1e6, Some(1e7)).unwrap();
        assert!((q.mean(1) / 1e6 - 1.0).abs() < 1e-9, "{}", q.mean(1));
        // a tiny shape with a cap: nearly log-uniform, finite
        let t = Pareto::new(1e-9, 1000.0, Some(1e6)).unwrap();
        let want = (1e6 - 1000.0) / (1e6f64 / 1000.0).ln(); // the α -> 0 limit
        assert!((t.mean(1) / want - 1.0).abs() < 1e-3, "{} vs {want}", t.mean(1));
    }

    #[test]
    fn bad_pareto_parameters_name_the_field() {
        assert_eq!(Pareto::new(1.0, 1000.0, None).unwrap_err().0, "shape");
        assert_eq!(Pareto::new(0.5, 1000.0, None).unwrap_err().0, "shape");
        assert_eq!(Pareto::new(f64::NAN, 1000.0, None).unwrap_err().0, "shape");
        assert_eq!(Pareto::new(1.5, 0.0, None).unwrap_err().0, "min_bytes");
        assert_eq!(Pareto::new(1.5, 1000.0, Some(500.0)).unwrap_err().0, "max_bytes");
        assert_eq!(Pareto::with_mean(1.0, 1000.0, None).unwrap_err().0, "shape");
        assert_eq!(Pareto::with_mean(1.5, 0.0, None).unwrap_err().0, "mean_bytes");
        assert_eq!(Pareto::with_mean(1.5, 1000.0, Some(900.0)).unwrap_err().0, "max_bytes");
        assert_eq!(Pareto::with_mean(1.001, 500.0, None).unwrap_err().0, "mean_bytes");
    }

    #[test]
    fn a_mixture_draws_classes_in_proportion_and_its_mean_is_the_weighted_mean() {
        let small = SizeDist::Pareto(Pareto::with_mean(1.5, 20_000.0, None).unwrap());
        let large = SizeDist::Cdf(Cdf::fixed(50_000_000));
        let mix = FlowSizes {
            classes: vec![SizeClass { name: "small".into(), fraction: 0.9, dist: small }, SizeClass { name: "large".into(), fraction: 0.1, dist: large }],
        };
        assert!((mix.mean(1) - (0.9 * 20_000.0 + 0.1 * 50e6)).abs() < 1e-3);
        let mut rng = Rng::from_seed(3);
        let n = 100_000;
        let draws: Vec<(u64, u8)> = (0..n).map(|_| mix.sample(&mut rng, 1)).collect();
        let large_share = draws.iter().filter(|d| d.1 == 1).count() as f64 / n as f64;
        assert!((large_share - 0.1).abs() < 0.005, "{large_share}");
        assert!(draws.iter().all(|&(s, k)| (k == 1) == (s == 50_000_000)));
    }
}
