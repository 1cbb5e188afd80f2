//! `cargo bench -p lbsim-sim`: the engine on benchmark B1 (bench/README.md;
//! the scenario of examples/b1.toml) and on the Clove testbed under asymmetry,
//! best of a few repetitions, reported as wall time and events per second.
//! A plain harness (no criterion): one run is long enough to time directly,
//! and the numbers to compare across commits are events/s.

use lbsim_sim::{run, Scenario};
use std::time::Instant;

fn bench(name: &str, file: &str, sets: &[&str], reps: usize) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(file);
    let text = std::fs::read_to_string(&path).expect("example scenario");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::from_toml(&text, &sets).expect("valid scenario");
    let mut best = f64::MAX;
    let mut events = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let out = run(&sc, path.parent(), &mut |_| true).expect("run");
        best = best.min(t.elapsed().as_secs_f64());
        events = out.summary["events"].as_u64().unwrap();
    }
    println!("{name:<34} {best:8.3} s  {events:>11} events  {:6.2} M events/s (best of {reps})", events as f64 / best / 1e6);
}

fn main() {
    // `cargo bench` passes --bench; filters are not supported
    bench("B1, 1000 flows", "b1.toml", &["workload.flows=1000"], 3);
    bench("B1, 5000 flows", "b1.toml", &[], 2);
    bench("Clove testbed, asym, 70 %, clove_ecn", "clove_testbed.toml", &["lb.scheme=clove_ecn", "workload.load=0.7", "failures=[{link=\"S1-L1#0\"}]"], 2);
}
