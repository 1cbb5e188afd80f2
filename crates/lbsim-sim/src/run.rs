//! The run loop: pops events until the workload is done or the stop time
//! passes, reporting progress about every 0.25 s of wall time.

use crate::build::{build, Built};
use crate::scenario::Scenario;
use crate::summary::{finish, Ran};
use crate::{Progress, RunOutput, SimError};
use lbsim_engine::SimTime;
use std::path::Path;

/// Checks a scenario as far as a run goes before its first event, so
/// `lbsim validate` and `lbsim run` cannot disagree about what is valid.
pub fn validate(sc: &Scenario, base_dir: Option<&Path>) -> Result<(), SimError> {
    build(sc, base_dir).map(|_| ())
}

pub fn run(sc: &Scenario, base_dir: Option<&Path>, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, SimError> {
    let Built { mut w, hard_stop, workload_info, rtt, ecn_desc, wall0 } = build(sc, base_dir)?;
    let wl = &sc.workload;
    // run
    w.start(SimTime::from_us_f64(wl.start_us));
    let total = if w.incast.is_some() { (wl.incast.requests * wl.incast.fan_in) as usize } else { w.arrivals.len() };
    let setup_s = wall0.elapsed().as_secs_f64();
    let t_run = std::time::Instant::now();
    let mut last_report = t_run;
    let mut steps: u64 = 0;
    loop {
        if !w.step(hard_stop) {
            break;
        }
        if w.finished() {
            break;
        }
        steps += 1;
        if steps & 0xFFFF == 0 && last_report.elapsed().as_secs_f64() >= 0.25 {
            last_report = std::time::Instant::now();
            let p =
                Progress { sim_time: w.now(), flows_done: w.done, flows_total: total, events: w.q.events_processed(), wall_s: t_run.elapsed().as_secs_f64() };
            if !progress(&p) {
                return Err(SimError::Interrupted);
            }
        }
    }
    let run_s = t_run.elapsed().as_secs_f64();
    let events = w.q.events_processed();
    Ok(finish(sc, w, Ran { events, workload_info, rtt, ecn_desc, setup_s, run_s }))
}
