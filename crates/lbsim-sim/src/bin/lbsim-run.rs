//! `lbsim-run [--explain] SCENARIO.toml [key=value ...]`: runs a scenario with no Python
//! and prints its summary as JSON (the Python CLI `lbsim run` also writes
//! the per-flow table). For benchmarks and cargo-only use: the summary
//! gains `flows_digest`, a hash of every cell of the flows table, so two builds can
//! be checked for identical results without writing the table, and
//! `provenance` with this command line. `--explain` prints what
//! `lbsim validate --json` prints instead of running.

use lbsim_sim::{run_with, RunOptions, Scenario};
use std::path::Path;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let mut args: Vec<String> = argv[1..].to_vec();
    let explain = args.first().is_some_and(|a| a == "--explain");
    if explain {
        args.remove(0);
    }
    let Some(path) = args.first() else {
        eprintln!("usage: lbsim-run [--explain] SCENARIO.toml [key=value ...]");
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
    if explain {
        match lbsim_sim::explain(&sc, base) {
            Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap()),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1)
            }
        }
        return;
    }
    let opts = RunOptions { allow_long: true, command_line: Some(argv.join(" ")) };
    match run_with(&sc, base, &opts, None, &mut |_| true) {
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
