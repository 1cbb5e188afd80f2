//! PyO3 bindings: `lbsim._lbsim`. Thin by design (polars style): parse and
//! validate in Rust, run in Rust, hand columns back to Python, which builds
//! the Arrow tables. No per-packet Python: the only call back into Python
//! during a run is the progress callback, a few times per second.

use lbsim_sim::columns::Cells;
use lbsim_sim::{flow_list, run_with as run_sim, validate as validate_sim, Progress, RunOptions, Scenario, SimError};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

create_exception!(lbsim._lbsim, ScenarioError, PyValueError, "A scenario is invalid; `.field` names the offending field.");

fn scenario_err(py: Python<'_>, e: &lbsim_sim::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let _ = err.value(py).setattr("field", e.field.clone());
    err
}

fn parse(py: Python<'_>, text: &str, sets: Vec<String>) -> PyResult<Scenario> {
    Scenario::from_toml(text, &sets).map_err(|e| scenario_err(py, &e))
}

/// Validates a scenario as far as a run goes before its first event
/// (topology, routes, scheme, failures, samplers, flow-list and CDF files
/// relative to `base_dir`); raises ScenarioError naming the field if
/// invalid. Returns the scenario's resolved seed.
#[pyfunction]
#[pyo3(signature = (text, sets=vec![], base_dir=None))]
fn validate(py: Python<'_>, text: &str, sets: Vec<String>, base_dir: Option<PathBuf>) -> PyResult<u64> {
    let sc = parse(py, text, sets)?;
    match validate_sim(&sc, base_dir.as_deref()) {
        Ok(()) => Ok(sc.seed),
        Err(SimError::Scenario(e)) => Err(scenario_err(py, &e)),
        Err(SimError::Interrupted) => Err(PyKeyboardInterrupt::new_err("validation interrupted")),
    }
}

/// What a scenario asks for (lbsim_sim::explain) as JSON text: sizes,
/// capacity, per-rack offered load, expected simulated time, estimated
/// events / wall time / memory, warnings. Validates as `validate` does.
#[pyfunction]
#[pyo3(signature = (text, sets=vec![], base_dir=None))]
fn explain(py: Python<'_>, text: &str, sets: Vec<String>, base_dir: Option<PathBuf>) -> PyResult<String> {
    let sc = parse(py, text, sets)?;
    match lbsim_sim::explain(&sc, base_dir.as_deref()) {
        Ok(v) => Ok(serde_json::to_string(&v).unwrap()),
        Err(SimError::Scenario(e)) => Err(scenario_err(py, &e)),
        Err(SimError::Interrupted) => Err(PyKeyboardInterrupt::new_err("validation interrupted")),
    }
}

/// The notes `validate`, `run` and `compare` print for a scenario
/// (lbsim_sim::scheme_notes: a scheme that hides ECN marks from an
/// ECN-driven transport) as JSON text: a list of {key, message}. Parses the
/// scenario only (cheap); ScenarioError if it does not parse.
#[pyfunction]
#[pyo3(signature = (text, sets=vec![]))]
fn scheme_notes(py: Python<'_>, text: &str, sets: Vec<String>) -> PyResult<String> {
    let sc = parse(py, text, sets)?;
    Ok(serde_json::to_string(&lbsim_sim::scheme_notes(&sc)).unwrap())
}

/// The refusal `run` gives a scenario whose estimated wall time exceeds a
/// day: raises ScenarioError naming the key (explained: `explain`'s JSON).
#[pyfunction]
fn check_long(py: Python<'_>, explained: &str) -> PyResult<()> {
    let v: serde_json::Value = serde_json::from_str(explained).map_err(|e| PyValueError::new_err(e.to_string()))?;
    match lbsim_sim::too_long(&v) {
        Some(e) => Err(scenario_err(py, &e)),
        None => Ok(()),
    }
}

/// The scenario as a run sees it, as TOML text (lbsim_sim::resolved_toml):
/// the overrides applied, the files it names made absolute from `base_dir`.
#[pyfunction]
#[pyo3(signature = (text, sets=vec![], base_dir=None))]
fn resolved_toml(py: Python<'_>, text: &str, sets: Vec<String>, base_dir: Option<PathBuf>) -> PyResult<String> {
    lbsim_sim::resolved_toml(text, &sets, base_dir.as_deref()).map_err(|e| scenario_err(py, &e))
}

/// The flow list a scenario generates, as CSV text (`src,dst,size_bytes,start_us`).
#[pyfunction]
#[pyo3(signature = (text, sets=vec![], base_dir=None))]
fn flows_csv(py: Python<'_>, text: &str, sets: Vec<String>, base_dir: Option<PathBuf>) -> PyResult<String> {
    let sc = parse(py, text, sets)?;
    let f = flow_list(&sc, base_dir.as_deref()).map_err(|e| scenario_err(py, &e))?;
    Ok(lbsim_workload::write_flow_list(&f))
}

/// Runs a scenario. Returns a dict of column dicts (`flows`, `links`,
/// `queues`, `ports`) and the summary as JSON text. Refuses (ScenarioError
/// naming the key) work estimated at more than a day unless `allow_long`;
/// `on_start`, if given, is called once before the first event with the
/// run's explanation as JSON text (what `explain` returns), and stops the
/// run by returning False; `command_line` goes to the summary's provenance.
#[pyfunction]
#[pyo3(signature = (text, sets=vec![], base_dir=None, progress=None, allow_long=false, command_line=None, on_start=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    text: &str,
    sets: Vec<String>,
    base_dir: Option<PathBuf>,
    progress: Option<PyObject>,
    allow_long: bool,
    command_line: Option<String>,
    on_start: Option<PyObject>,
) -> PyResult<PyObject> {
    let sc = parse(py, text, sets)?;
    let opts = RunOptions { allow_long, command_line };
    let mut start_err: Option<PyErr> = None;
    let mut start = |e: &serde_json::Value| -> bool {
        let Some(f) = &on_start else { return true };
        match f.call1(py, (serde_json::to_string(e).unwrap(),)) {
            Ok(r) => r.extract::<bool>(py).ok() != Some(false),
            Err(e) => {
                start_err = Some(e);
                false
            }
        }
    };
    let mut cb_err: Option<PyErr> = None;
    let mut cb = |p: &Progress| -> bool {
        if let Err(e) = py.check_signals() {
            cb_err = Some(e);
            return false;
        }
        if let Some(f) = &progress {
            let d = PyDict::new(py);
            let _ = d.set_item("sim_time_s", p.sim_time.as_secs_f64());
            let _ = d.set_item("flows_done", p.flows_done);
            let _ = d.set_item("flows_total", p.flows_total);
            let _ = d.set_item("events", p.events);
            let _ = d.set_item("wall_s", p.wall_s);
            match f.call1(py, (d,)) {
                Ok(r) => {
                    if r.extract::<bool>(py).ok() == Some(false) {
                        return false;
                    }
                }
                Err(e) => {
                    cb_err = Some(e);
                    return false;
                }
            }
        }
        true
    };
    // a panic is a bug in lbsim: surface it as an ordinary exception (not
    // PyO3's BaseException-derived PanicException) that names the scenario
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let start: Option<&mut dyn FnMut(&serde_json::Value) -> bool> = if on_start.is_some() { Some(&mut start) } else { None };
        run_sim(&sc, base_dir.as_deref(), &opts, start, &mut cb)
    }));
    let result = match caught {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            return Err(PyRuntimeError::new_err(format!(
                "internal error in lbsim (a bug; please report it with this scenario, {:?}, seed {}): {msg}",
                sc.name, sc.seed
            )));
        }
    };
    let out = match result {
        Ok(o) => o,
        Err(SimError::Scenario(e)) => return Err(scenario_err(py, &e)),
        Err(SimError::Interrupted) => {
            return Err(start_err.or(cb_err).unwrap_or_else(|| PyKeyboardInterrupt::new_err("run stopped by the on_start or progress callback")))
        }
    };
    let res = PyDict::new(py);
    for (table, cols) in lbsim_sim::columns::table_cells(&out) {
        let d = PyDict::new(py);
        for (name, cells) in cols {
            match cells {
                Cells::I64(v) => d.set_item(name, v)?,
                Cells::F64(v) => d.set_item(name, v)?,
                Cells::Bool(v) => d.set_item(name, v)?,
                Cells::Str(v) => d.set_item(name, v)?,
            }
        }
        res.set_item(table, d)?;
    }
    res.set_item("summary_json", serde_json::to_string(&out.summary).unwrap())?;
    res.set_item("fct_txt", &out.fct_txt)?;
    Ok(res.into_any().unbind())
}

/// Every load-balancing scheme: name, summary, paper section, what it
/// changes in what the hosts' transport receives, parameters.
#[pyfunction]
fn schemes(py: Python<'_>) -> PyResult<PyObject> {
    let list = PyList::empty(py);
    for s in lbsim_lb::SCHEMES {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("summary", s.summary)?;
        d.set_item("follows", s.follows)?;
        d.set_item("acts_at", s.acts_at)?;
        d.set_item("transport_sees", s.guest.changes.to_vec())?;
        d.set_item("clears_ce_unless", s.guest.ce_unless)?;
        let ps = PyList::empty(py);
        for p in s.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("unit", p.unit)?;
            pd.set_item("default", p.default.to_string())?;
            pd.set_item("help", p.help)?;
            ps.append(pd)?;
        }
        d.set_item("params", ps)?;
        list.append(d)?;
    }
    Ok(list.into_any().unbind())
}

/// Checks the model's inputs (each error names its argument).
fn ag_input(
    paths: u32,
    congested: u32,
    rtt_good_us: f64,
    rtt_bad_us: f64,
    window_pkts: u32,
    pkt_bytes: u32,
    path_gbps: f64,
) -> PyResult<lbsim_lb::ag::model::Input> {
    let bad = |f: &str, m: String| Err(PyValueError::new_err(format!("{f}: {m}")));
    if paths == 0 || congested > paths {
        return bad("congested", format!("must be from 0 to paths ({paths}), and paths at least 1"));
    }
    if !(rtt_good_us.is_finite() && rtt_good_us > 0.0 && rtt_bad_us.is_finite() && rtt_bad_us > 0.0) {
        return bad("rtt_good_us/rtt_bad_us", "must be positive numbers of microseconds".into());
    }
    if window_pkts == 0 || window_pkts > 4096 || pkt_bytes == 0 || !(path_gbps.is_finite() && path_gbps > 0.0) {
        return bad("window_pkts/pkt_bytes/path_gbps", "must be positive (window at most 4096 packets)".into());
    }
    Ok(lbsim_lb::ag::model::Input {
        paths,
        congested,
        rtt_g_s: rtt_good_us * 1e-6,
        rtt_b_s: rtt_bad_us * 1e-6,
        window_pkts,
        pkt_bytes,
        path_bps: path_gbps * 1e9,
    })
}

/// AG's model (§IV-A, eqs. 1-6): the average rate r(gran) in Gb/s.
#[pyfunction]
#[pyo3(signature = (gran, paths, congested, rtt_good_us, rtt_bad_us, window_pkts=44, pkt_bytes=1500, path_gbps=1.0))]
// one argument per Python keyword of the signature above
#[allow(clippy::too_many_arguments)]
fn ag_rate_gbps(gran: u32, paths: u32, congested: u32, rtt_good_us: f64, rtt_bad_us: f64, window_pkts: u32, pkt_bytes: u32, path_gbps: f64) -> PyResult<f64> {
    let m = ag_input(paths, congested, rtt_good_us, rtt_bad_us, window_pkts, pkt_bytes, path_gbps)?;
    if gran == 0 || gran > window_pkts {
        return Err(PyValueError::new_err(format!("gran: must be from 1 to window_pkts ({window_pkts})")));
    }
    Ok(lbsim_lb::ag::model::rate(gran, &m) / 1e9)
}

/// AG's optimal train size gran* (eq. 7), the same code the `ag` scheme runs.
#[pyfunction]
#[pyo3(signature = (paths, congested, rtt_good_us, rtt_bad_us, window_pkts=44, pkt_bytes=1500, path_gbps=1.0, search="exhaustive"))]
// one argument per Python keyword of the signature above
#[allow(clippy::too_many_arguments)]
fn ag_optimal_granularity(
    paths: u32,
    congested: u32,
    rtt_good_us: f64,
    rtt_bad_us: f64,
    window_pkts: u32,
    pkt_bytes: u32,
    path_gbps: f64,
    search: &str,
) -> PyResult<u32> {
    use lbsim_lb::ag::model::{optimal_granularity, Search};
    let m = ag_input(paths, congested, rtt_good_us, rtt_bad_us, window_pkts, pkt_bytes, path_gbps)?;
    let s = match search {
        "exhaustive" => Search::Exhaustive,
        "bisect" => Search::Bisect,
        _ => return Err(PyValueError::new_err(format!("search: must be \"exhaustive\" or \"bisect\", got {search:?}"))),
    };
    Ok(optimal_granularity(&m, s))
}

/// AG's model (§IV-A, eq. 1): the probability that a window of W packets in
/// trains of `gran` is reordered when M_b of M paths are congested (Fig. 7).
#[pyfunction]
#[pyo3(signature = (gran, paths, congested, window_pkts=44))]
fn ag_reorder_probability(gran: u32, paths: u32, congested: u32, window_pkts: u32) -> PyResult<f64> {
    let m = ag_input(paths, congested, 250.0, 250.0, window_pkts, 1500, 1.0)?;
    if gran == 0 || gran > window_pkts {
        return Err(PyValueError::new_err(format!("gran: must be from 1 to window_pkts ({window_pkts})")));
    }
    Ok(lbsim_lb::ag::model::reorder_probability(m.window_pkts.div_ceil(gran), m.congested as f64 / m.paths as f64))
}

/// Every output table and its columns (lbsim_sim::columns): a list of
/// dicts with table, row, name, type (an Arrow type name), unit, doc.
#[pyfunction]
fn columns(py: Python<'_>) -> PyResult<PyObject> {
    let list = PyList::empty(py);
    for t in lbsim_sim::columns::tables() {
        for c in &t.columns {
            let d = PyDict::new(py);
            d.set_item("table", t.name)?;
            d.set_item("row", t.row)?;
            d.set_item("name", c.name)?;
            d.set_item("type", c.ty.arrow())?;
            d.set_item("unit", c.unit)?;
            d.set_item("doc", c.doc)?;
            list.append(d)?;
        }
    }
    Ok(list.into_any().unbind())
}

/// The model revision that results of `scheme` depend on (the simulator's,
/// plus the scheme's own when it has one).
#[pyfunction]
fn model_revision(scheme: &str) -> String {
    lbsim_sim::model_revision(scheme)
}

#[pymodule]
fn _lbsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(ag_reorder_probability, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(flows_csv, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(check_long, m)?)?;
    m.add_function(wrap_pyfunction!(resolved_toml, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_notes, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(model_revision, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(ag_rate_gbps, m)?)?;
    m.add_function(wrap_pyfunction!(ag_optimal_granularity, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__model_revision__", lbsim_sim::MODEL_REVISION)?;
    m.add("__git_commit__", lbsim_sim::provenance::GIT_COMMIT)?;
    m.add("__git_dirty__", lbsim_sim::provenance::GIT_DIRTY)?;
    m.add("__build__", lbsim_sim::provenance::build_line())?;
    Ok(())
}
