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

/// How to run: whether to refuse work estimated at more than a day
/// ([`crate::explain::too_long`]), and the command line to record in the
/// summary's provenance.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Run even if the estimate exceeds a day (`--allow-long`).
    pub allow_long: bool,
    /// The command that started the run (summary.json `provenance.command_line`).
    pub command_line: Option<String>,
}

/// Runs a scenario however long it takes (see [`run_with`]).
pub fn run(sc: &Scenario, base_dir: Option<&Path>, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, SimError> {
    run_with(sc, base_dir, &RunOptions { allow_long: true, command_line: None }, None, progress)
}

/// Runs a scenario: refuses it (a [`ScenarioError`](crate::ScenarioError)
/// naming the key) if its estimated wall time exceeds a day unless
/// `opts.allow_long`; calls `on_start`, if given, once before the first
/// event with the run's explanation ([`crate::explain`]'s JSON: the header
/// `lbsim run` prints, and `long_run`, the warning it gives unless
/// `--allow-long`), which stops the run by returning false; the summary
/// gains `provenance` and, when flows are left unfinished or none
/// completes, `flows.warning` naming the likely cause.
pub fn run_with(
    sc: &Scenario,
    base_dir: Option<&Path>,
    opts: &RunOptions,
    on_start: Option<&mut dyn FnMut(&serde_json::Value) -> bool>,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<RunOutput, SimError> {
    let started = crate::provenance::utc_now();
    let built = build(sc, base_dir)?;
    if !opts.allow_long || on_start.is_some() {
        let explained = crate::explain::explain_built(sc, &built);
        if let Some(e) = crate::explain::too_long(&explained).filter(|_| !opts.allow_long) {
            return Err(e.into());
        }
        if on_start.is_some_and(|f| !f(&explained)) {
            return Err(SimError::Interrupted);
        }
    }
    let Built { mut w, hard_stop, workload_info, rtt, ecn_desc, wall0 } = built;
    let wl = &sc.workload;
    // run
    w.start(SimTime::from_us_f64(wl.start_us));
    let total = if w.incast.is_some() { wl.incast.requests as usize * wl.incast.fan_in as usize } else { w.arrivals.len() };
    let setup_s = wall0.elapsed().as_secs_f64();
    let t_run = std::time::Instant::now();
    let mut last_report = t_run;
    loop {
        if !w.step(hard_stop) {
            break;
        }
        if w.finished() {
            break;
        }
        if w.q.events_processed() & 0xFFFF == 0 && last_report.elapsed().as_secs_f64() >= 0.25 {
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
    let end = w.now();
    // stopped by the stop time with work left (not out of events, not done)
    let stopped = !w.finished() && w.q.peek_time().is_some_and(|t| t > hard_stop);
    let udp_over = crate::explain::udp_over_line(&w.topo, &sc.udp, &w.udp);
    let mut out = finish(sc, w, Ran { events, workload_info, rtt, ecn_desc, setup_s, run_s });
    out.summary["provenance"] = crate::provenance::provenance(&sc.lb.scheme, opts.command_line.as_deref(), &started);
    if let Some((key, msg)) = crate::explain::unfinished_warning(sc, &out.flows, end, hard_stop, stopped, &udp_over) {
        out.summary["flows"]["warning"] = msg.into();
        out.summary["flows"]["warning_key"] = key.into();
    }
    Ok(out)
}
