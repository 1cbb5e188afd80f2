//! `cargo bench -p lbsim-engine --bench windows`: what running in parallel
//! windows costs and gives on this machine (issue 19's second core;
//! bench/README.md, tenth pass), on a model with the shape of the scale
//! benchmark's runs rather than the simulator itself.
//!
//! Tokens (packets) hop through two partitions: each event does a fixed
//! amount of work (calibrated, ~70 ns: about what one simulator event costs
//! on B1) and schedules the token's next hop, in the same partition after
//! 0-2 L or, for a quarter of hops (B1's share of events that cross; k = 8 to
//! k = 24: 16-17 %), in the other after L-2 L. The token count sets the
//! events per window, swept over the range the eighth pass measured (B1 ~80,
//! k = 8 ~400, k = 16 ~700, k = 24 ~1,400).
//!
//! Two kinds of hop: `events`, each hop a plain event; `ports`, each hop a
//! message on one of 32 FIFO channels per pair of partitions (a packet on a
//! port: a delivery names the next one, and the meeting decides the serial
//! numbers of deliveries across partitions).
//!
//! Three runs of the same events, same results (checked): `serial`, one
//! `EventQueue`; `in turn`, the windows with both partitions on one thread
//! (the bookkeeping alone); `2 threads`, one thread per partition. Then the
//! same three in the keyed order (`lbsim_engine::windows::keyed`: ties
//! broken by the scheduling partition and its own count, so no merge at the
//! meetings), whose results differ from the first three's but agree among
//! themselves (checked); and the serial order once more in windows that
//! merge only the picoseconds two partitions share
//! (`lbsim_engine::windows::ancestry`), with the first three's results
//! (checked). Best of five, alternating. A plain harness: the numbers are the measurement.
//! `cargo bench -p lbsim-engine --bench windows -- ports 400` runs one row
//! (for a profiler); `-- ports 400 63` also fixes the work per event at 63
//! steps (calibration under callgrind would make it almost nothing), and
//! `-- ports 400 63 keyed` (or `serial`, `ancestry`) runs one order.

use lbsim_engine::windows::{ancestry, keyed, run, run_serial, Config, Out, Part, Report, WindowError};
use lbsim_engine::{mix64, SimTime};
use std::hint::black_box;
use std::time::Instant;

const L: u64 = 1_000_000; // 1 us, in ps

/// `iters` steps of dependent arithmetic.
fn work(iters: u64, seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Channels per ordered pair of partitions in the `ports` model (B1 has
/// 80 ports in all).
const PORTS: usize = 32;

/// Aligned so the two partitions' states, written at every event, never
/// share a cache line (a model's partitions need the same).
#[repr(align(128))]
struct Hops {
    iters: u64,
    cross_per_256: u64,
    /// Hop on FIFO channels (ports), or as plain events.
    ports: bool,
    /// Per channel: the last message's time (a FIFO link).
    last: Vec<SimTime>,
    acc: u64,
}

impl Hops {
    fn hop(&mut self, now: SimTime, tok: u64, out: &mut Out<u64, u64>) {
        // the partition's history, in order: results differ if the order does
        self.acc = mix64(self.acc ^ work(self.iters, tok) ^ now.0);
        let r = mix64(tok ^ now.0);
        let me = out.me();
        let (to, at) = if r & 255 < self.cross_per_256 { (1 - me, now + SimTime(L + (r >> 8) % L)) } else { (me, now + SimTime((r >> 8) % (2 * L))) };
        if self.ports {
            let ch = (me * 2 + to) * PORTS + (r >> 40) as usize % PORTS;
            let at = at.max(self.last[ch]);
            self.last[ch] = at;
            out.push(ch, at, r);
        } else {
            out.send(to, at, r);
        }
    }
}

impl Part for Hops {
    type Ev = u64; // the token's hash
    type Msg = u64;
    fn handle(&mut self, now: SimTime, tok: u64, out: &mut Out<u64, u64>) {
        self.hop(now, tok, out);
    }
    fn receive(&mut self, now: SimTime, _: usize, tok: u64, out: &mut Out<u64, u64>) {
        self.hop(now, tok, out);
    }
}

type SerialRun = fn(&mut [Hops], &[(usize, usize)], &[(SimTime, usize, u64)], SimTime, bool) -> Report;
type WindowsRun = fn(&mut [Hops], &[(usize, usize)], &[(SimTime, usize, u64)], Config) -> Result<Report, WindowError>;

fn parts(iters: u64, ports: bool) -> Vec<Hops> {
    (0..2).map(|_| Hops { iters, cross_per_256: 64, ports, last: vec![SimTime::ZERO; 4 * PORTS], acc: 0 }).collect()
}

fn main() {
    // `cargo bench ... -- ports 400` runs one row (for a profiler), and
    // `-- ports 400 63` also fixes the work per event, which is otherwise
    // calibrated to ~70 ns (under callgrind, to almost nothing)
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let iters = match only.get(2) {
        Some(n) => n.parse().expect("work steps per event: a whole number"),
        None => {
            let t = Instant::now();
            black_box(work(20_000_000, 1));
            let per_ns = 20_000_000.0 / (t.elapsed().as_secs_f64() * 1e9);
            (70.0 * per_ns) as u64
        }
    };
    println!("work: {iters} steps per event (~70 ns when calibrated)");
    println!("| order | hops | tokens | events | events per window | bound | serial M ev/s | in turn M ev/s | 2 threads M ev/s | 2 threads / serial | in turn / serial | meeting ns |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let chans: Vec<(usize, usize)> = (0..4 * PORTS).map(|i| (i / PORTS / 2, i / PORTS % 2)).collect();
    for (ports, tokens) in [false, true].into_iter().flat_map(|p| [80u64, 400, 700, 1_400].map(|t| (p, t))) {
        if only.len() >= 2 && (only[0] != if ports { "ports" } else { "events" } || only[1] != tokens.to_string()) {
            continue;
        }
        let chans = if ports { &chans[..] } else { &[] };
        let init: Vec<(SimTime, usize, u64)> = (0..tokens).map(|i| (SimTime(mix64(i) % L), (i % 2) as usize, mix64(i + 7))).collect();
        let until = SimTime(4_000_000_000_000 / tokens); // ~4 M events
        let row = |order: &str, serial_run: SerialRun, windows_run: WindowsRun| {
            let cfg = Config { lookahead: SimTime(L), until, threads: false, trace: false };
            let (mut serial, mut turn, mut two) = (f64::MAX, f64::MAX, f64::MAX);
            let (mut events, mut windows, mut busiest) = (0u64, 0u64, 0u64);
            for _ in 0..5 {
                let mut p = parts(iters, ports);
                let t = Instant::now();
                let rs = serial_run(&mut p, chans, &init, until, false);
                serial = serial.min(t.elapsed().as_secs_f64());
                let acc_serial: Vec<u64> = p.iter().map(|h| h.acc).collect();

                let mut p = parts(iters, ports);
                let t = Instant::now();
                let rt = windows_run(&mut p, chans, &init, cfg).expect("in turn");
                turn = turn.min(t.elapsed().as_secs_f64());
                assert_eq!(p.iter().map(|h| h.acc).collect::<Vec<_>>(), acc_serial, "in turn differs from serial");

                let mut p = parts(iters, ports);
                let t = Instant::now();
                let r2 = windows_run(&mut p, chans, &init, Config { threads: true, ..cfg }).expect("threads");
                two = two.min(t.elapsed().as_secs_f64());
                assert_eq!(p.iter().map(|h| h.acc).collect::<Vec<_>>(), acc_serial, "2 threads differ from serial");
                assert_eq!((rs.events.clone(), rt.events.clone()), (r2.events.clone(), r2.events.clone()));
                events = rs.events.iter().sum();
                windows = r2.windows;
                busiest = r2.busiest;
            }
            let rate = |s: f64| events as f64 / s / 1e6;
            // what two threads took beyond the busiest side's events at the
            // in-turn run's time per event, per window
            let meeting = (two - busiest as f64 * turn / events as f64) / windows as f64;
            println!(
                "| {order} | {} | {tokens} | {events} | {:.0} | {:.2}x | {:.2} | {:.2} | {:.2} | {:.2}x | {:.2}x | {:.0} |",
                if ports { "ports" } else { "events" },
                events as f64 / windows as f64,
                events as f64 / busiest as f64,
                rate(serial),
                rate(turn),
                rate(two),
                serial / two,
                serial / turn,
                meeting * 1e9
            );
        };
        // `-- ports 400 63 keyed` runs one order only
        if !matches!(only.get(3), Some(o) if o != "serial") {
            row("serial", run_serial, run);
        }
        if !matches!(only.get(3), Some(o) if o != "keyed") {
            row("keyed", keyed::run_serial, keyed::run);
        }
        // the serial queue's order again, windows merging only the
        // picoseconds two partitions share (same results as `serial`)
        if !matches!(only.get(3), Some(o) if o != "ancestry") {
            row("ancestry", run_serial, ancestry::run);
        }
    }
}
