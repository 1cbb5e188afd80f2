//! Collective operations as their exact step structure: which rank sends
//! how many bytes to which rank in each step (before the simulator splits a
//! send over a rank pair's channels).
//!
//! A rank starts its sends of step `s + 1` once it has received everything
//! sent to it in step `s` (the dependency the simulator enforces; step 0
//! starts with the iteration). Sizes follow the collective benchmarks'
//! convention (nccl-tests): `size` is the all-reduce buffer, the all-gather
//! output, the reduce-scatter input and the all-to-all send buffer of one
//! rank. Chunks are byte ranges of the buffer: chunk `k` of `n` is
//! `size / n` bytes plus one for the first `size % n` chunks, so byte counts
//! are exact for any size.
//!
//! - `all_reduce` (ring): 2(n-1) steps; in step `s` rank `i` sends chunk
//!   `(i - s) mod n` to rank `i + 1` (reduce-scatter for `s < n - 1`, then
//!   all-gather). Every rank sends and receives 2(n-1)/n x size.
//! - `reduce_scatter`, `all_gather` (ring): the n-1 steps of either half.
//! - `all_to_all`: one step in which every rank sends `size / n` to each
//!   of the n-1 others, all at once.
//! - `all_reduce_hd` (recursive halving then doubling, Thakur et al. 2005;
//!   n a power of two): 2 log2(n) steps; in halving step `k` rank `i`
//!   exchanges with `i xor n/2^(k+1)` the half of its current segment it
//!   does not keep, the doubling steps retrace them in reverse.

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    AllReduceHd,
}

/// The names `jobs[].op` accepts, in [`CollOp::from_name`]'s order.
pub const COLL_OPS: &[&str] = &["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "all_reduce_hd"];

/// One send of a step: `bytes` from rank `from` to rank `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send {
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
}

impl CollOp {
    pub fn from_name(s: &str) -> Option<CollOp> {
        Some(match s {
            "all_reduce" => CollOp::AllReduce,
            "all_gather" => CollOp::AllGather,
            "reduce_scatter" => CollOp::ReduceScatter,
            "all_to_all" => CollOp::AllToAll,
            "all_reduce_hd" => CollOp::AllReduceHd,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        COLL_OPS[self as usize]
    }

    /// Bus bandwidth over algorithm bandwidth (nccl-tests' convention):
    /// 2(n-1)/n for all-reduce, (n-1)/n for the others.
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            CollOp::AllReduce | CollOp::AllReduceHd => 2.0 * (n - 1.0) / n,
            _ => (n - 1.0) / n,
        }
    }

    /// Why `n` ranks cannot run this operation, if they cannot.
    pub fn check_ranks(self, n: u32) -> Result<(), String> {
        if n < 2 {
            return Err(format!("a collective needs at least 2 ranks; got {n}"));
        }
        if self == CollOp::AllReduceHd && !n.is_power_of_two() {
            return Err(format!("all_reduce_hd needs a power-of-two number of ranks; got {n}"));
        }
        Ok(())
    }

    /// The steps of one iteration on `n` ranks for a `size`-byte message:
    /// per step, its sends in rank order (`n` >= 2, see [`CollOp::check_ranks`]).
    /// A send may carry 0 bytes only if `size < n`.
    pub fn steps(self, n: u32, size: u64) -> Vec<Vec<Send>> {
        let chunk = |k: u32| size / n as u64 + u64::from((k as u64) < size % n as u64);
        let ring = |s: u32| -> Vec<Send> { (0..n).map(|i| Send { from: i, to: (i + 1) % n, bytes: chunk((i + n - s % n) % n) }).collect() };
        match self {
            CollOp::AllReduce => (0..2 * (n - 1)).map(ring).collect(),
            CollOp::ReduceScatter => (0..n - 1).map(ring).collect(),
            // the ring all-reduce's second half
            CollOp::AllGather => (n - 1..2 * (n - 1)).map(ring).collect(),
            CollOp::AllToAll => {
                vec![(0..n).flat_map(|i| (1..n).map(move |d| (i, (i + d) % n))).map(|(i, j)| Send { from: i, to: j, bytes: chunk(j) }).collect()]
            }
            CollOp::AllReduceHd => {
                // each rank's current segment [lo, hi) of the buffer
                let mut seg: Vec<(u64, u64)> = vec![(0, size); n as usize];
                let mut halving = vec![];
                let mut dist = n / 2;
                while dist >= 1 {
                    let mut step = vec![];
                    let mut next = seg.clone();
                    for i in 0..n {
                        let (lo, hi) = seg[i as usize];
                        let mid = lo + (hi - lo) / 2;
                        let p = i ^ dist;
                        // the lower rank of the pair keeps the lower half
                        let (keep, give) = if i < p { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
                        step.push(Send { from: i, to: p, bytes: give.1 - give.0 });
                        next[i as usize] = keep;
                    }
                    seg = next;
                    halving.push(step);
                    dist /= 2;
                }
                // doubling: the same exchanges in reverse, each rank sending
                // what it holds to the partner that gave it away
                let mut doubling: Vec<Vec<Send>> =
                    halving.iter().rev().map(|st| st.iter().map(|s| Send { from: s.from, to: s.to, bytes: 0 }).collect::<Vec<_>>()).collect();
                let mut held = seg;
                let mut dist = 1;
                for st in doubling.iter_mut() {
                    let mut next = held.clone();
                    for s in st.iter_mut() {
                        debug_assert_eq!(s.to, s.from ^ dist);
                        let (lo, hi) = held[s.from as usize];
                        s.bytes = hi - lo;
                        let (plo, phi) = held[s.to as usize];
                        next[s.from as usize] = (lo.min(plo), hi.max(phi));
                    }
                    held = next;
                    dist *= 2;
                }
                halving.extend(doubling);
                halving
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes each rank sends and receives over one iteration.
    fn per_rank(steps: &[Vec<Send>], n: u32) -> (Vec<u64>, Vec<u64>) {
        let (mut tx, mut rx) = (vec![0; n as usize], vec![0; n as usize]);
        for s in steps.iter().flatten() {
            tx[s.from as usize] += s.bytes;
            rx[s.to as usize] += s.bytes;
        }
        (tx, rx)
    }

    #[test]
    fn ring_all_reduce_moves_2_n_minus_1_over_n_of_the_message_per_rank() {
        for (n, size) in [(2u32, 1000u64), (4, 4_000_000), (5, 5_000), (16, 64 << 20)] {
            let st = CollOp::AllReduce.steps(n, size);
            assert_eq!(st.len() as u32, 2 * (n - 1));
            assert!(st.iter().all(|s| s.len() as u32 == n && s.iter().all(|x| x.to == (x.from + 1) % n)));
            let (tx, rx) = per_rank(&st, n);
            let want = 2 * (n as u64 - 1) * size / n as u64;
            assert!(tx.iter().chain(&rx).all(|&b| b == want), "n={n}: {tx:?} {rx:?} want {want}");
            // each step moves every chunk once: the whole message
            assert!(st.iter().all(|s| s.iter().map(|x| x.bytes).sum::<u64>() == size));
        }
    }

    #[test]
    fn uneven_sizes_keep_exact_totals() {
        // 1001 bytes over 4 ranks: chunks 251, 250, 250, 250
        let st = CollOp::AllReduce.steps(4, 1001);
        assert_eq!(st.iter().flatten().map(|s| s.bytes).sum::<u64>(), 2 * 3 * 1001);
        let st = CollOp::AllToAll.steps(4, 1001);
        // each rank keeps its own chunk: the others' 3/4 leave
        let (tx, _) = per_rank(&st, 4);
        assert_eq!(tx.iter().sum::<u64>(), 4 * 1001 - 1001);
    }

    #[test]
    fn all_gather_and_reduce_scatter_are_the_halves() {
        for n in [2u32, 3, 8] {
            let size = 8_000 * n as u64;
            for op in [CollOp::AllGather, CollOp::ReduceScatter] {
                let st = op.steps(n, size);
                assert_eq!(st.len() as u32, n - 1);
                let (tx, rx) = per_rank(&st, n);
                let want = (n as u64 - 1) * size / n as u64;
                assert!(tx.iter().chain(&rx).all(|&b| b == want), "{op:?} n={n}");
            }
            // all-gather: rank i forwards first its own chunk i
            let ag = CollOp::AllGather.steps(n, size);
            assert!(ag[0].iter().all(|s| s.bytes == size / n as u64));
        }
    }

    #[test]
    fn all_to_all_is_one_step_of_n_minus_1_sends_per_rank() {
        let n = 6;
        let st = CollOp::AllToAll.steps(n, 6_000_000);
        assert_eq!(st.len(), 1);
        assert_eq!(st[0].len() as u32, n * (n - 1));
        let (tx, rx) = per_rank(&st, n);
        assert!(tx.iter().chain(&rx).all(|&b| b == 5_000_000));
        let mut pairs: Vec<_> = st[0].iter().map(|s| (s.from, s.to)).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len() as u32, n * (n - 1), "every ordered pair once");
        assert!(pairs.iter().all(|p| p.0 != p.1));
    }

    #[test]
    fn halving_doubling_exchanges_pairwise_and_moves_the_ring_total() {
        for n in [2u32, 4, 16] {
            let size = 1 << 20;
            let st = CollOp::AllReduceHd.steps(n, size);
            assert_eq!(st.len() as u32, 2 * n.trailing_zeros());
            for s in &st {
                // pairwise: if i sends to j, j sends to i in the same step
                assert!(s.iter().all(|x| s.iter().any(|y| y.from == x.to && y.to == x.from)));
            }
            let (tx, rx) = per_rank(&st, n);
            let want = 2 * (n as u64 - 1) * size / n as u64;
            assert!(tx.iter().chain(&rx).all(|&b| b == want), "n={n}: {tx:?}");
        }
        assert!(CollOp::AllReduceHd.check_ranks(6).is_err());
        assert!(CollOp::AllReduce.check_ranks(1).is_err());
        assert!(CollOp::AllReduce.check_ranks(3).is_ok());
    }

    #[test]
    fn bus_factors_follow_the_benchmarks() {
        assert_eq!(CollOp::AllReduce.bus_factor(4), 1.5);
        assert_eq!(CollOp::AllGather.bus_factor(4), 0.75);
        assert_eq!(CollOp::AllToAll.bus_factor(2), 0.5);
        for (i, name) in COLL_OPS.iter().enumerate() {
            assert_eq!(CollOp::from_name(name).unwrap().name(), *name);
            assert_eq!(CollOp::from_name(name).unwrap() as usize, i);
        }
    }
}
