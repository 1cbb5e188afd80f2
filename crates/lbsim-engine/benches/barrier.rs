//! `cargo bench -p lbsim-engine --bench barrier`: what one synchronous
//! window of a two-thread conservative engine would cost in
//! synchronisation alone (issue 19's design study, bench/README.md): two
//! threads meet at a spinning barrier, with no work between meetings and
//! with a fixed amount of work, and the time per meeting is printed.
//! A plain harness: the numbers are the measurement.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A two-party barrier: each side counts its arrivals; a side waits until
/// the other has arrived as often.
struct Pair {
    arrived: [AtomicU64; 2],
}

impl Pair {
    fn wait(&self, me: usize, round: u64) {
        self.arrived[me].store(round, Ordering::Release);
        while self.arrived[1 - me].load(Ordering::Acquire) < round {
            std::hint::spin_loop();
        }
    }
}

/// About `n` nanoseconds of dependent arithmetic (calibrated below).
fn work(iters: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

fn rounds(n: u64, iters: u64) -> (f64, f64) {
    let pair = Arc::new(Pair { arrived: [AtomicU64::new(0), AtomicU64::new(0)] });
    let p2 = pair.clone();
    let other = std::thread::spawn(move || {
        for r in 1..=n {
            black_box(work(iters));
            p2.wait(1, r);
        }
    });
    let t = Instant::now();
    let mut worst = 0f64;
    for r in 1..=n {
        let t0 = Instant::now();
        black_box(work(iters));
        pair.wait(0, r);
        worst = worst.max(t0.elapsed().as_secs_f64());
    }
    let total = t.elapsed().as_secs_f64();
    other.join().unwrap();
    (total / n as f64, worst)
}

fn main() {
    // calibrate: iterations per microsecond of work on one thread
    let t = Instant::now();
    black_box(work(20_000_000));
    let per_us = 20_000_000.0 / (t.elapsed().as_secs_f64() * 1e6);
    println!("work: {per_us:.0} iterations per us");
    for work_us in [0.0, 1.0, 4.0] {
        let iters = (work_us * per_us) as u64;
        let n = if work_us == 0.0 { 2_000_000 } else { 300_000 };
        let alone = {
            let t = Instant::now();
            for _ in 0..n {
                black_box(work(iters));
            }
            t.elapsed().as_secs_f64() / n as f64
        };
        let (per, worst) = rounds(n, iters);
        println!(
            "{work_us:>4.1} us of work per window: {:8.1} ns per window with two threads, {:8.1} ns alone; sync {:7.1} ns per window; slowest window {:8.1} us ({n} windows)",
            per * 1e9,
            alone * 1e9,
            (per - alone) * 1e9,
            worst * 1e6
        );
    }
}
