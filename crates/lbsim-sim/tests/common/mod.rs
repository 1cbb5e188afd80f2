//! Helpers shared by the scenario-level integration tests.
#![allow(dead_code)]

use lbsim_sim::{run, RunOutput, Scenario};

/// Runs a scenario with overrides; asserts packet and byte conservation.
pub fn run_ok(text: &str, sets: &[String]) -> RunOutput {
    let sc = Scenario::from_toml(text, sets).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&sc, None, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.summary["conservation"]["ok"], true, "{}", out.summary["conservation"]);
    out
}

pub fn sets(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Writes a flow list and returns the override that replays it.
pub fn flow_file(name: &str, rows: &[(u32, u32, u64, f64)]) -> String {
    let dir = std::env::temp_dir().join(format!("lbsim-it-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flows.csv");
    let mut t = String::from("src,dst,size_bytes,start_us\n");
    for r in rows {
        t.push_str(&format!("{},{},{},{}\n", r.0, r.1, r.2, r.3));
    }
    std::fs::write(&path, t).unwrap();
    format!("workload.flow_list=\"{}\"", path.display())
}

/// Runs a scenario that must be refused; returns the error's text.
pub fn run_err(text: &str, sets: &[String]) -> String {
    match Scenario::from_toml(text, sets) {
        Err(e) => e.to_string(),
        Ok(sc) => match run(&sc, None, &mut |_| true) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted {sets:?}"),
        },
    }
}
