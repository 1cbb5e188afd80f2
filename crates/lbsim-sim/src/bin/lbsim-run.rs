//! `lbsim-run SCENARIO.toml [key=value ...]`: runs a scenario with no Python
//! and prints its summary as JSON (the Python CLI `lbsim run` also writes
//! the per-flow table). For benchmarks and cargo-only use: the summary
//! gains `flows_digest`, a hash of every per-flow record, so two builds can
//! be checked for identical results without writing the table.
//! `--windows` runs it on the engine's parallel windows instead
//! (`lbsim_sim::run_in_windows`, one partition: for checking and measuring
//! that path; built with `--features windows`).

use lbsim_sim::{run, Scenario};
use std::path::Path;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let windows = args.iter().any(|a| a == "--windows");
    args.retain(|a| a != "--windows");
    let Some(path) = args.first() else {
        eprintln!("usage: lbsim-run [--windows] SCENARIO.toml [key=value ...]");
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
    #[cfg(feature = "windows")]
    let out = if windows { lbsim_sim::run_in_windows(&sc, base) } else { run(&sc, base, &mut |_| true) };
    #[cfg(not(feature = "windows"))]
    let out = if windows {
        eprintln!("lbsim-run: --windows needs a build with `--features windows`");
        std::process::exit(2)
    } else {
        run(&sc, base, &mut |_| true)
    };
    match out {
        Ok(out) => {
            let mut summary = out.summary;
            summary["flows_digest"] = format!("{:016x}", digest(&out.flows)).into();
            println!("{}", serde_json::to_string_pretty(&summary).unwrap())
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

/// FNV-1a over the per-flow records' debug form (every field, in order).
fn digest(flows: &[lbsim_sim::FlowRecord]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for f in flows {
        for b in format!("{f:?}").bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    h
}
