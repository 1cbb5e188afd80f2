//! Empirical flow-size distributions.
//!
//! The files in `cdfs/` are copied verbatim from public simulation artifacts
//! (see `cdfs/PROVENANCE.md`). Sampling interpolates linearly between
//! points, the first point being a point mass (the convention of most
//! simulators; the offered load is computed with this sampler's own mean).
//! A sample is rounded to whole bytes and clamped to at least `min_bytes`
//! (one packet), never 0.

use lbsim_engine::Rng;
use std::fmt;

/// How a CDF file writes its points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CdfFormat {
    /// `bytes cdf` per line.
    Bytes,
    /// `packets 1 cdf` per line; sizes are packets × `unit` bytes.
    Packets { unit: f64 },
    /// `bytes percent` per line.
    Percent,
    /// First line is the mean, then `bytes cdf`.
    MeanHeader,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    pub name: String,
    /// (bytes, cumulative probability), non-decreasing in both, ending at 1.
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CdfError(pub String);
impl fmt::Display for CdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CdfError {}

/// The CDFs shipped with lbsim: (name, file text, format).
pub const BUILTIN: &[(&str, &str, CdfFormat)] = &[
    ("websearch", include_str!("../cdfs/websearch_bytes.txt"), CdfFormat::Bytes),
    ("websearch_packets", include_str!("../cdfs/websearch_packets.txt"), CdfFormat::Packets { unit: 1460.0 }),
    ("datamining", include_str!("../cdfs/datamining_vl2_bytes.txt"), CdfFormat::Bytes),
    ("datamining_packets", include_str!("../cdfs/datamining_vl2_packets.txt"), CdfFormat::Packets { unit: 1460.0 }),
    ("enterprise", include_str!("../cdfs/enterprise_bytes.txt"), CdfFormat::Bytes),
    ("fb_hadoop", include_str!("../cdfs/fb_hadoop_bytes.txt"), CdfFormat::Percent),
    ("fb_cache_follower", include_str!("../cdfs/fb_cache_follower_bytes.txt"), CdfFormat::MeanHeader),
    ("fb_webserver", include_str!("../cdfs/fb_webserver_bytes.txt"), CdfFormat::MeanHeader),
    ("alistorage", include_str!("../cdfs/alistorage_bytes_percent.txt"), CdfFormat::Percent),
];

impl Cdf {
    /// A built-in CDF by name; for packet-form CDFs `unit` overrides the
    /// bytes per packet.
    pub fn builtin(name: &str, unit: Option<f64>) -> Result<Cdf, CdfError> {
        let (n, text, fmt) = BUILTIN
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| CdfError(format!("unknown CDF {name:?}; built-in: {}", BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", "))))?;
        let fmt = match (fmt, unit) {
            (CdfFormat::Packets { .. }, Some(u)) => CdfFormat::Packets { unit: u },
            (f, _) => *f,
        };
        Cdf::parse(n, text, fmt)
    }

    pub fn parse(name: &str, text: &str, fmt: CdfFormat) -> Result<Cdf, CdfError> {
        let mut pts = vec![];
        let mut lines = text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if fmt == CdfFormat::MeanHeader {
            lines.next();
        }
        for (i, l) in lines.enumerate() {
            let f: Vec<f64> =
                l.split_whitespace().map(|t| t.parse::<f64>()).collect::<Result<_, _>>().map_err(|e| CdfError(format!("{name}: line {}: {e}", i + 1)))?;
            let (x, p) = match (fmt, f.as_slice()) {
                (CdfFormat::Bytes | CdfFormat::MeanHeader, [x, p]) => (*x, *p),
                (CdfFormat::Percent, [x, p]) => (*x, *p / 100.0),
                (CdfFormat::Packets { unit }, [x, _, p]) => (*x * unit, *p),
                _ => return Err(CdfError(format!("{name}: line {}: unexpected {} fields", i + 1, f.len()))),
            };
            pts.push((x, p));
        }
        Cdf::from_points(name, pts)
    }

    pub fn from_points(name: &str, pts: Vec<(f64, f64)>) -> Result<Cdf, CdfError> {
        if pts.is_empty() {
            return Err(CdfError(format!("{name}: no points")));
        }
        if let Some(i) = pts.iter().position(|(x, p)| !x.is_finite() || !p.is_finite()) {
            return Err(CdfError(format!("{name}: point {} ({}, {}) is not a finite number", i + 1, pts[i].0, pts[i].1)));
        }
        for w in pts.windows(2) {
            if w[1].0 < w[0].0 || w[1].1 < w[0].1 {
                return Err(CdfError(format!("{name}: points must be non-decreasing ({:?} then {:?})", w[0], w[1])));
            }
        }
        let last = pts.last().unwrap().1;
        if (last - 1.0).abs() > 1e-6 {
            return Err(CdfError(format!("{name}: last probability is {last}, expected 1")));
        }
        if pts[0].0 < 0.0 || pts[0].1 < 0.0 {
            return Err(CdfError(format!("{name}: negative value")));
        }
        Ok(Cdf { name: name.to_string(), points: pts })
    }

    /// A single fixed size.
    pub fn fixed(bytes: u64) -> Cdf {
        Cdf { name: format!("fixed_{bytes}"), points: vec![(bytes as f64, 1.0)] }
    }

    /// The size at quantile `u` in [0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let p = &self.points;
        if u <= p[0].1 {
            return p[0].0;
        }
        let i = p.partition_point(|&(_, c)| c < u).min(p.len() - 1);
        let (x0, c0) = p[i - 1];
        let (x1, c1) = p[i];
        if c1 <= c0 {
            return x1;
        }
        x0 + (x1 - x0) * (u - c0) / (c1 - c0)
    }

    /// One flow size in bytes, at least `min_bytes`.
    pub fn sample(&self, rng: &mut Rng, min_bytes: u64) -> u64 {
        (self.quantile(rng.f64()).round() as u64).max(min_bytes).max(1)
    }

    /// Exact mean of [`Cdf::sample`] (before rounding to whole bytes).
    pub fn mean(&self, min_bytes: u64) -> f64 {
        let m = min_bytes.max(1) as f64;
        let p = &self.points;
        let mut acc = p[0].1 * p[0].0.max(m);
        for w in p.windows(2) {
            let ((x0, c0), (x1, c1)) = (w[0], w[1]);
            let dp = c1 - c0;
            if dp <= 0.0 {
                continue;
            }
            // E[max(X, m)] for X uniform on [x0, x1]
            let e = if m <= x0 {
                (x0 + x1) / 2.0
            } else if m >= x1 {
                m
            } else {
                ((m - x0) * m + (x1 - m) * (x1 + m) / 2.0) / (x1 - x0)
            };
            acc += dp * e;
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_point_is_refused() {
        let e = Cdf::parse("mine.txt", "100 0.5\nnan 0.7\n300 1.0\n", CdfFormat::Bytes).unwrap_err();
        assert!(e.0.contains("mine.txt: point 2") && e.0.contains("not a finite number"), "{}", e.0);
        assert!(Cdf::parse("mine.txt", "100 0.5\n200 NaN\n300 1.0\n", CdfFormat::Bytes).is_err());
    }

    #[test]
    fn builtin_means_match_the_provenance_table() {
        // PROVENANCE.md gives the linear-interpolation means.
        for (name, mean) in [
            ("websearch", 1_711_250.0),
            ("datamining", 12_658_199.0),
            ("enterprise", 157_357.0),
            ("websearch_packets", 1_665_831.0),
            ("fb_hadoop", 121_849.0),
            ("alistorage", 40_870.0),
        ] {
            let c = Cdf::builtin(name, None).unwrap();
            let m = c.mean(1);
            assert!((m - mean).abs() / mean < 0.002, "{name}: {m} vs {mean}");
        }
    }

    #[test]
    fn sampled_mean_converges_to_the_exact_mean() {
        let c = Cdf::builtin("websearch", None).unwrap();
        let mut r = Rng::stream(5, "t");
        let n = 400_000;
        let s: f64 = (0..n).map(|_| c.sample(&mut r, 1448) as f64).sum::<f64>() / n as f64;
        let m = c.mean(1448);
        assert!((s - m).abs() / m < 0.02, "{s} vs {m}");
    }

    #[test]
    fn point_mass_and_clamp() {
        let c = Cdf::builtin("websearch_packets", Some(1000.0)).unwrap();
        // 15 % of flows are exactly 6 packets
        assert_eq!(c.quantile(0.1), 6000.0);
        let mut r = Rng::stream(1, "t");
        let d = Cdf::builtin("datamining", None).unwrap();
        for _ in 0..10_000 {
            assert!(d.sample(&mut r, 1448) >= 1448);
        }
        // the clamp raises the mean of tiny flows
        assert!(d.mean(1448) > d.mean(1));
    }

    #[test]
    fn bad_cdfs_are_rejected() {
        assert!(Cdf::parse("x", "1 0.5\n2 0.4\n", CdfFormat::Bytes).is_err());
        assert!(Cdf::parse("x", "1 0.5\n2 0.9\n", CdfFormat::Bytes).is_err());
        assert!(Cdf::parse("x", "1 0.5 7\n", CdfFormat::Bytes).is_err());
        assert!(Cdf::builtin("nope", None).is_err());
    }
}
