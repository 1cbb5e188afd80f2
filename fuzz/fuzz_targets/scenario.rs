//! Fuzzes the scenario path a user's file takes before the first event:
//! TOML parsing, overrides, unit conversion and validation
//! (`Scenario::from_toml`), then everything a run builds (`validate`:
//! topology, routing, scheme, failures, samplers, flows). Any input must
//! give `Ok` or an error naming a field; a panic, abort, or a unit slower
//! than libFuzzer's `-timeout` is a bug (issue 18).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lbsim_sim::{validate, Scenario};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(sc) = Scenario::from_toml(text, &[]) {
        // flow lists and CDF files resolve against a folder with none of
        // them: a missing file must be an error too
        let _ = validate(&sc, Some(std::path::Path::new("/nonexistent")));
    }
});
