//! A set of disjoint half-open byte ranges `[start, end)`, kept sorted and
//! merged. Used for the sender's SACK scoreboard and the receiver's
//! out-of-order queue. Sets are tiny (a handful of holes), so a sorted `Vec`
//! beats any tree.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    r: Vec<(u64, u64)>,
    /// Bytes covered in all (kept so that the common "everything above
    /// snd.una" query of RFC 6675's pipe is O(1)).
    total: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        RangeSet { r: Vec::new(), total: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }
    pub fn len(&self) -> usize {
        self.r.len()
    }
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.r
    }
    pub fn clear(&mut self) {
        self.r.clear();
        self.total = 0;
    }

    /// Adds `[a, b)`, merging with neighbours. Returns the number of bytes
    /// that were not already covered.
    pub fn insert(&mut self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        // First range whose end >= a (could touch or overlap).
        let i = self.r.partition_point(|&(_, e)| e < a);
        let mut lo = a;
        let mut hi = b;
        let mut covered = 0;
        let mut j = i;
        while j < self.r.len() && self.r[j].0 <= hi {
            let (s, e) = self.r[j];
            // overlap of [s,e) with [a,b)
            let os = s.max(a);
            let oe = e.min(b);
            if oe > os {
                covered += oe - os;
            }
            lo = lo.min(s);
            hi = hi.max(e);
            j += 1;
        }
        self.r.splice(i..j, std::iter::once((lo, hi)));
        self.total += (b - a) - covered;
        (b - a) - covered
    }

    /// Removes everything below `x`.
    pub fn remove_below(&mut self, x: u64) {
        let i = self.r.partition_point(|&(_, e)| e <= x);
        self.total -= self.r.drain(..i).map(|(s, e)| e - s).sum::<u64>();
        if let Some(f) = self.r.first_mut() {
            if f.0 < x {
                self.total -= x - f.0;
                f.0 = x;
            }
        }
    }

    /// The range containing `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.r.partition_point(|&(_, e)| e <= x);
        self.r.get(i).copied().filter(|&(s, _)| s <= x)
    }

    /// The first range starting at or after `x`.
    pub fn next_at_or_after(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.r.partition_point(|&(s, _)| s < x);
        self.r.get(i).copied()
    }

    /// The end of the range containing `x`, or `x` if none does: the first
    /// byte at or after `x` that is not covered, when ranges never touch.
    pub fn skip(&self, x: u64) -> u64 {
        self.containing(x).map_or(x, |(_, e)| e)
    }

    /// Counting covered bytes of `[a, b)` downwards from `b`: `Ok(x)` where
    /// `x` is the `(n + 1)`-th covered byte (so `[x, b)` holds exactly
    /// `n + 1` covered bytes), or `Err(c)` with `c <= n` the bytes covered
    /// in `[a, b)` if there are not that many.
    pub fn nth_covered_from_top(&self, a: u64, b: u64, n: u64) -> Result<u64, u64> {
        let i = self.r.partition_point(|&(s, _)| s < b);
        let mut acc = 0;
        for &(s, e) in self.r[..i].iter().rev() {
            if e <= a {
                break;
            }
            let (os, oe) = (s.max(a), e.min(b));
            let len = oe - os;
            if acc + len > n {
                return Ok(oe - (n - acc + 1));
            }
            acc += len;
        }
        Err(acc)
    }

    /// Bytes covered inside `[a, b)`.
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        match (self.r.first(), self.r.last()) {
            (None, _) => return 0,
            (Some(&(s, _)), Some(&(_, e))) if a <= s && e <= b => return self.total,
            _ => {}
        }
        let mut n = 0;
        for &(s, e) in &self.r {
            if s >= b {
                break;
            }
            let os = s.max(a);
            let oe = e.min(b);
            if oe > os {
                n += oe - os;
            }
        }
        n
    }

    /// Total bytes covered.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Highest covered byte + 1, or `None`.
    pub fn max_end(&self) -> Option<u64> {
        self.r.last().map(|&(_, e)| e)
    }

    /// The lowest sequence number `L` such that more than `threshold` bytes are
    /// covered at or above `L` (RFC 6675 IsLost: every hole byte below `L` is
    /// deemed lost). `None` if fewer bytes than that are covered in all.
    pub fn loss_point(&self, threshold: u64) -> Option<u64> {
        let mut acc = 0;
        for &(s, e) in self.r.iter().rev() {
            let len = e - s;
            if acc + len > threshold {
                // need (threshold - acc + 1) bytes from the top of this range
                return Some(e - (threshold - acc + 1));
            }
            acc += len;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts_new_bytes() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(30, 40), 10);
        assert_eq!(s.insert(15, 35), 10); // only 20..30 is new
        assert_eq!(s.as_slice(), &[(10, 40)]);
        assert_eq!(s.insert(40, 50), 10); // touching ranges merge
        assert_eq!(s.as_slice(), &[(10, 50)]);
        assert_eq!(s.insert(0, 5), 5);
        assert_eq!(s.as_slice(), &[(0, 5), (10, 50)]);
    }

    #[test]
    fn kept_total_equals_the_sum_of_ranges_and_answers_covered_in() {
        let mut s = RangeSet::new();
        let mut x = 7u64;
        for step in 0..5000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let a = (x >> 33) % 1000;
            match step % 7 {
                0 => s.remove_below(a / 4 + step / 10),
                6 if step % 700 == 6 => s.clear(),
                _ => {
                    s.insert(a, a + (x >> 50) % 40);
                }
            }
            let sum: u64 = s.as_slice().iter().map(|&(a, b)| b - a).sum();
            assert_eq!(s.total(), sum, "step {step}");
            let slow = |lo: u64, hi: u64| s.as_slice().iter().map(|&(a, b)| b.min(hi).saturating_sub(a.max(lo))).sum::<u64>();
            assert_eq!(s.covered_in(0, 2000), slow(0, 2000));
            assert_eq!(s.covered_in(a, a + 100), slow(a, a + 100));
        }
    }

    #[test]
    fn remove_below_trims() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        s.remove_below(15);
        assert_eq!(s.as_slice(), &[(15, 20), (30, 40)]);
        s.remove_below(20);
        assert_eq!(s.as_slice(), &[(30, 40)]);
        assert_eq!(s.containing(35), Some((30, 40)));
        assert_eq!(s.containing(40), None);
        assert_eq!(s.covered_in(0, 35), 5);
    }

    #[test]
    fn loss_point_counts_from_the_top() {
        let mut s = RangeSet::new();
        s.insert(100, 200);
        s.insert(300, 400);
        // more than 150 bytes at or above L: 100 from [300,400) + 51 from [100,200)
        assert_eq!(s.loss_point(150), Some(149));
        assert_eq!(s.loss_point(99), Some(300));
        assert_eq!(s.loss_point(200), None);
    }

    #[test]
    fn nth_covered_from_top_agrees_with_loss_point() {
        let mut s = RangeSet::new();
        s.insert(100, 200);
        s.insert(300, 400);
        for n in [0, 50, 99, 100, 150, 199, 200, 250] {
            assert_eq!(s.nth_covered_from_top(0, u64::MAX, n).ok(), s.loss_point(n), "{n}");
        }
        // restricted to [150, 350): 50 + 50 covered bytes
        assert_eq!(s.nth_covered_from_top(150, 350, 49), Ok(300));
        assert_eq!(s.nth_covered_from_top(150, 350, 50), Ok(199));
        assert_eq!(s.nth_covered_from_top(150, 350, 100), Err(100));
        assert_eq!(s.skip(150), 200);
        assert_eq!(s.skip(250), 250);
    }
}
