//! Seeded random-number streams.
//!
//! One root seed is split into independent named streams ("traffic",
//! "ecmp", "scheme", ...) so that a component's draws depend only on the
//! root seed and its own name: changing the load-balancing scheme, which
//! draws from "scheme", leaves the traffic (drawn from "traffic") unchanged.
//!
//! The generator is xoshiro256++ (Blackman & Vigna), seeded through
//! SplitMix64 as its authors recommend. It is implemented here (a dozen
//! lines) so that streams never change with a dependency upgrade.

/// SplitMix64 finaliser: a fast, well-mixing 64-bit bijection.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// FNV-1a over a name, to turn stream names into seeds.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// An independent pseudo-random stream.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream called `name` under `root_seed`.
    pub fn stream(root_seed: u64, name: &str) -> Rng {
        Rng::from_seed(mix64(root_seed) ^ fnv1a(name))
    }

    /// Sub-stream `index` of the stream called `name` (one per switch, per host...).
    pub fn substream(root_seed: u64, name: &str, index: u64) -> Rng {
        Rng::from_seed(mix64(mix64(root_seed) ^ fnv1a(name)) ^ mix64(index.wrapping_add(0x5555)))
    }

    pub fn from_seed(seed: u64) -> Rng {
        let mut z = seed;
        let mut s = [0u64; 4];
        for w in s.iter_mut() {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *w = mix64(z);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = (self.s[0].wrapping_add(self.s[3])).rotate_left(23).wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n), unbiased (Lemire's method). `n` must be > 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        // 1 - U is in (0, 1], so the log is finite.
        -mean * (1.0 - self.f64()).ln()
    }

    /// A uniformly random permutation of 0..n (Fisher–Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(7, "traffic");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(7, "traffic");
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(7, "scheme");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(Rng::substream(7, "x", 0).next_u64(), Rng::substream(7, "x", 1).next_u64());
    }

    #[test]
    fn below_is_uniform() {
        let mut r = Rng::stream(1, "t");
        let mut counts = [0u32; 5];
        for _ in 0..100_000 {
            counts[r.below(5) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 - 20_000.0).abs() < 600.0, "{counts:?}");
        }
    }

    #[test]
    fn exp_has_the_requested_mean() {
        let mut r = Rng::stream(3, "t");
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.exp(2.5)).sum::<f64>() / n as f64;
        assert!((m - 2.5).abs() < 0.03, "{m}");
    }
}
