//! `cargo bench -p lbsim-engine --bench barrier`: what one synchronous
//! window of a two-thread conservative engine would cost in
//! synchronisation alone (issue 19's design study, bench/README.md): two
//! threads meet at a spinning barrier, with no work between meetings and
//! with a fixed amount of work, and the time per meeting is printed. Then
//! what handing packets over costs: per window each thread writes 10
//! packet-sized records (192 B, three cache lines) and, after the meeting,
//! reads the 10 the other thread wrote (their lines move between the
//! cores) or, as the control, its own; the difference per record is the
//! cost of a hand-over. A plain harness: the numbers are the measurement.

// `is_multiple_of` needs Rust 1.87; the workspace supports 1.80.
#![allow(clippy::manual_is_multiple_of)]

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
    /// Fails rather than spins forever if the other thread has stopped
    /// (it panicked): no meeting takes anywhere near 10 s.
    fn wait(&self, me: usize, round: u64) {
        self.arrived[me].store(round, Ordering::Release);
        let mut spins = 0u64;
        let mut since: Option<Instant> = None;
        while self.arrived[1 - me].load(Ordering::Acquire) < round {
            std::hint::spin_loop();
            spins += 1;
            if spins % (1 << 20) == 0 {
                let t = *since.get_or_insert_with(Instant::now);
                assert!(t.elapsed().as_secs() < 10, "the other thread stopped at round {round}");
            }
        }
    }
}

/// `iters` steps of dependent arithmetic (`main` calibrates steps per us).
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

/// A packet-sized record: three cache lines.
#[repr(C, align(64))]
struct Rec {
    w: [u64; 24],
}

/// Two outboxes of `RING` records each; window `r` uses slots
/// `(r * PER) % RING ..` so a slot is reused only every `RING / PER`
/// windows, long after it left the reader's cache.
const RING: usize = 8000; // a multiple of PER
const PER: usize = 10;
const _: () = assert!(RING % PER == 0, "a window's slots must not run past the ring");

struct Boxes {
    slots: Vec<std::cell::UnsafeCell<Rec>>,
}
// Each slot is written by one thread before a meeting and read after it,
// never both at once (the barrier's release/acquire orders the accesses).
unsafe impl Sync for Boxes {}

fn handover(n: u64, iters: u64, cross: bool) -> f64 {
    let boxes = Arc::new(Boxes { slots: (0..2 * RING).map(|_| std::cell::UnsafeCell::new(Rec { w: [0; 24] })).collect() });
    let pair = Arc::new(Pair { arrived: [AtomicU64::new(0), AtomicU64::new(0)] });
    let side = move |me: usize, boxes: Arc<Boxes>, pair: Arc<Pair>| {
        let mut sum = 0u64;
        for r in 1..=n {
            let base = (r as usize * PER) % RING;
            for i in 0..PER {
                // SAFETY: slot (me, base + i) is written only by thread `me`,
                // and read by the other thread only after the next meeting.
                let rec = unsafe { &mut *boxes.slots[me * RING + base + i].get() };
                for (j, x) in rec.w.iter_mut().enumerate() {
                    *x = r ^ j as u64;
                }
            }
            pair.wait(me, 2 * r - 1);
            let from = if cross { 1 - me } else { me };
            for i in 0..PER {
                // SAFETY: written before the meeting above; its writer does not
                // touch it again until this window's second meeting.
                let rec = unsafe { &*boxes.slots[from * RING + base + i].get() };
                sum = sum.wrapping_add(rec.w[0] ^ rec.w[8] ^ rec.w[16]);
            }
            sum = sum.wrapping_add(work(iters));
            pair.wait(me, 2 * r);
        }
        black_box(sum)
    };
    let (b2, p2) = (boxes.clone(), pair.clone());
    let other = std::thread::spawn(move || side(1, b2, p2));
    let t = Instant::now();
    side(0, boxes, pair);
    let total = t.elapsed().as_secs_f64();
    other.join().unwrap();
    total / n as f64
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
    // hand-overs: 4 us of work per window, as on B1 (~40 events a side at
    // ~90 ns); best of three runs of each, alternating
    let iters = (4.0 * per_us) as u64;
    let n = 200_000;
    let (mut own, mut cross) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        own = own.min(handover(n, iters, false));
        cross = cross.min(handover(n, iters, true));
    }
    println!(
        "hand-over: {PER} records of 192 B a side per window: {:.1} ns per window reading its own, {:.1} ns reading the other's: {:.1} ns per record handed over",
        own * 1e9,
        cross * 1e9,
        (cross - own) * 1e9 / PER as f64
    );
}
