//! `lbsim-run SCENARIO.toml [key=value ...]`: runs a scenario with no Python
//! and prints its summary as JSON (the Python CLI `lbsim run` also writes
//! the per-flow table). For benchmarks and cargo-only use: the summary
//! gains `flows_digest`, a hash of every cell of the flows table, so two builds can
//! be checked for identical results without writing the table.

use lbsim_sim::{run, Scenario};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: lbsim-run SCENARIO.toml [key=value ...]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let sc = Scenario::from_toml(&text, &args[1..]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let base = Path::new(path).parent();
    match run(&sc, base, &mut |_| true) {
        Ok(out) => {
            let mut summary = out.summary.clone();
            summary["flows_digest"] = format!("{:016x}", lbsim_sim::columns::flows_digest(&out)).into();
            println!("{}", serde_json::to_string_pretty(&summary).unwrap())
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}
