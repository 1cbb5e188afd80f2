"""The Python API: scenarios in, tables out."""

from __future__ import annotations

import io
import json
import os
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq

from lbsim import _lbsim
from lbsim.errors import LbsimError, LongRunWarning, ScenarioError, native

ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]


@dataclass
class LoadedScenario:
    """Scenario TOML text and the folder relative file paths refer to."""

    text: str
    base_dir: Optional[str]


def _dumps_toml(d: Mapping[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(dict(d))


def read_text(path: Union[str, os.PathLike], what: str = "scenario file", error: type = ScenarioError) -> str:
    """A UTF-8 text file's contents. A missing, unreadable or non-file path
    raises OSError, and binary or non-UTF-8 contents raise ``error``, each
    with a one-line message naming ``what`` and the path."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {p}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{what} is a folder, not a file: {p}") from None
    except PermissionError:
        raise PermissionError(f"{what} not readable (permission denied): {p}") from None
    except OSError as e:
        raise OSError(f"{what} not readable: {p}: {e.strerror or e}") from None
    problem = None
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        problem = "UTF-16 text; save it as UTF-8"
    elif b"\0" in data:  # (never in TOML or CSV text)
        problem = f"not text (NUL byte at offset {data.index(0)}); a binary or UTF-16 file?"
    else:
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            problem = f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); a binary file?"
    err = error(f"{what} {p}: {problem}")
    err.field = ""
    raise err


def load_scenario(scenario: ScenarioLike) -> LoadedScenario:
    """Accepts a path to a ``.toml`` file, TOML text, or a dict. A
    ``Path`` (any ``os.PathLike``) is always a file."""
    if isinstance(scenario, Mapping):
        return LoadedScenario(_dumps_toml(scenario), None)
    s = os.fspath(scenario)
    if isinstance(scenario, os.PathLike) or ("\n" not in s and (s.endswith(".toml") or os.path.exists(s))):
        p = Path(s)
        return LoadedScenario(read_text(p), str(p.resolve().parent))
    return LoadedScenario(s, None)


def override_value(value: str) -> Any:
    """A ``--set key=value`` value as the scenario parser reads it: TOML
    value syntax, and a bare word is a string."""
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value.strip()


def resolved_scenario(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> str:
    """The scenario as a run sees it: the file with every ``--set`` override
    and the seed applied, as TOML (written beside results as scenario.toml;
    the files it names are made absolute so it replays from anywhere)."""
    sc = load_scenario(scenario)
    return native(_lbsim.resolved_toml, sc.text, _sets(seed, set), sc.base_dir)


def _sets(seed: Optional[int], set: Optional[Sequence[str]]) -> list[str]:
    out = list(set or [])
    if seed is not None:
        out.append(f"seed={int(seed)}")
    return out


def _columns_doc(table: str) -> str:
    """The columns of ``table`` as docstring lines: name [unit]: meaning."""
    rows = [c for c in _lbsim.columns() if c["table"] == table]
    head = rows[0]["row"].capitalize() + "." if rows else ""
    return head + "\n\n" + "\n".join(f"- {c['name']}" + (f" [{c['unit']}]" if c["unit"] else "") + f": {c['doc']}" for c in rows)


def _table_property(name: str) -> property:
    """A Result attribute: table ``name`` as a pandas DataFrame, documented
    from the column list."""
    return property(lambda self: self._frame(name), doc=_columns_doc(name))


@dataclass
class Result:
    """One run: per-flow records, samples and the summary.

    ``flows``, ``links``, ``queues``, ``ports``, ``jobs``, ``steps`` are pandas DataFrames (the
    Arrow tables are in ``tables``); ``summary`` is a dict (also written as
    summary.json).
    """

    tables: dict[str, pa.Table]
    summary: dict[str, Any]
    #: RDMA runs: the completed flows in the HPCC simulator's FCT format
    #: (``sip dip sport dport size start_ns fct_ns standalone_fct_ns``), written as fct.txt
    fct_txt: str = ""
    _df: dict[str, Any] = field(default_factory=dict, repr=False)
    #: the files the last ``write`` wrote
    written: list = field(default_factory=list, repr=False)

    def _frame(self, name: str):
        if name not in self._df:
            self._df[name] = self.tables[name].to_pandas()
        return self._df[name]

    flows = _table_property("flows")
    links = _table_property("links")
    queues = _table_property("queues")
    flow_rates = _table_property("flow_rates")
    scheme_samples = _table_property("scheme_samples")
    cwnd = _table_property("cwnd")
    qp_rates = _table_property("qp_rates")
    ports = _table_property("ports")
    jobs = _table_property("jobs")
    steps = _table_property("steps")

    def write(self, out_dir: Union[str, os.PathLike]) -> Path:
        """Writes flows.parquet, summary.json, fct.txt (RDMA runs) and (if sampled) links.parquet,
        queues.parquet, flow_rates.parquet, cwnd.parquet, and (with
        ``[[jobs]]``) jobs.parquet and steps.parquet (removing an earlier run's when
        this one has none), plus ports.parquet. Same scenario and seed give
        byte-identical flows.parquet. The files written are in ``self.written``."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        for name in _SCHEMAS:
            t = self.tables[name]
            if name == "pcap":
                # captured packets go out as pcap files, not as a table
                for old in d.glob("*.pcap"):
                    old.unlink()
                if t.num_rows:
                    from lbsim.pcap import write_pcaps

                    written += write_pcaps(t.to_pandas(), d)
                continue
            if name in ("links", "queues", "flow_rates", "scheme_samples", "cwnd", "qp_rates", "jobs", "steps") and t.num_rows == 0:
                (d / f"{name}.parquet").unlink(missing_ok=True)  # no stale samples from an earlier run
                continue
            tmp = d / f".{name}.parquet.tmp"
            pq.write_table(t, tmp, compression="zstd")
            os.replace(tmp, d / f"{name}.parquet")
            written.append(d / f"{name}.parquet")
        if self.fct_txt:
            tmp = d / ".fct.txt.tmp"
            tmp.write_text(self.fct_txt)
            os.replace(tmp, d / "fct.txt")
            written.append(d / "fct.txt")
        else:
            (d / "fct.txt").unlink(missing_ok=True)
        tmp = d / ".summary.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, d / "summary.json")
        written.append(d / "summary.json")
        self.written = written
        return d


def _schemas() -> dict[str, dict[str, Any]]:
    """Every output table's Arrow schema, from the simulator's one list of
    columns (``lbsim_sim::columns``)."""
    out: dict[str, dict[str, Any]] = {}
    for c in _lbsim.columns():
        out.setdefault(c["table"], {})[c["name"]] = getattr(pa, c["type"])()
    return out


_SCHEMAS = _schemas()


def _table(name: str, cols: Mapping[str, list]) -> pa.Table:
    schema = _SCHEMAS[name]
    return pa.table({k: pa.array(cols[k], type=t) for k, t in schema.items()})


def run(
    scenario: ScenarioLike,
    *,
    seed: Optional[int] = None,
    set: Optional[Sequence[str]] = None,
    progress: Optional[Callable[[dict], Any]] = None,
    allow_long: bool = False,
    command_line: Optional[str] = None,
    on_start: Optional[Callable[[dict], Any]] = None,
) -> Result:
    """Runs a scenario (path, TOML text or dict).

    ``set`` takes ``"key=value"`` overrides in TOML syntax, e.g.
    ``["workload.load=0.7", "lb.scheme=conga"]``; ``seed`` overrides the
    scenario's seed. ``progress`` is called a few times per second with a
    dict (sim_time_s, flows_done, flows_total, events, wall_s); returning
    False stops the run (KeyboardInterrupt). Work estimated at more than a
    day (``explain``) raises ScenarioError naming the key unless
    ``allow_long``. ``on_start``, if given, is called once before the first
    event with ``explain``'s dict (its ``long_run``: the warning about work
    estimated above ten minutes, or None); returning False stops the run.
    Without ``on_start``, that warning is a :class:`LongRunWarning` unless
    ``allow_long``. summary["provenance"] records the build, host, start
    time and ``command_line`` (default: this call); summary["flows"]["warning"]
    names the likely cause when flows are left unfinished.
    """
    sc = load_scenario(scenario)
    if command_line is None:
        command_line = _call_text("run", scenario, seed, set, allow_long=allow_long)

    def started(text: str) -> Any:
        e = json.loads(text)
        if on_start is not None:
            return on_start(e)
        if e["long_run"] and not allow_long:
            warnings.warn(e["long_run"]["message"], LongRunWarning, stacklevel=3)
        return True

    return _result(native(_lbsim.run, sc.text, _sets(seed, set), sc.base_dir, progress, allow_long, command_line, started))


def _call_text(fn: str, scenario: ScenarioLike, seed: Optional[int], set: Optional[Sequence[str]], **kw: Any) -> str:
    """The API call as text, e.g. ``lbsim.run('b1.toml', seed=2, set=['workload.load=0.7'])``."""
    if isinstance(scenario, Mapping):
        what = "<dict>"
    elif isinstance(scenario, os.PathLike) or ("\n" not in os.fspath(scenario)):
        what = repr(os.fspath(scenario))
    else:
        what = "<TOML text>"
    args = [what]
    if seed is not None:
        args.append(f"seed={int(seed)}")
    if set:
        args.append(f"set={list(set)!r}")
    args += [f"{k}={v!r}" for k, v in kw.items() if v]
    return f"lbsim.{fn}({', '.join(args)})"


def _result(raw: dict) -> Result:
    """A Result from the extension's raw output."""
    return Result(tables={name: _table(name, raw[name]) for name in _SCHEMAS}, summary=json.loads(raw["summary_json"]), fct_txt=raw["fct_txt"])


def flows(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None):
    """The flow list a scenario generates, as a DataFrame (src, dst,
    size_bytes, start_us); identical whatever the load-balancing scheme."""
    import pandas as pd

    sc = load_scenario(scenario)
    text = native(_lbsim.flows_csv, sc.text, _sets(seed, set), sc.base_dir)
    return pd.read_csv(io.StringIO(text))


def flows_csv(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> str:
    sc = load_scenario(scenario)
    return native(_lbsim.flows_csv, sc.text, _sets(seed, set), sc.base_dir)


def explain(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> dict:
    """What a scenario asks for, without running it: topology sizes, the
    capacity the load refers to, each rack's offered load against its
    uplinks and downlinks (``overloaded`` names the racks above 1), flows and
    expected simulated time, estimated events, wall time and peak memory
    (``estimate``; the model and its accuracy: lbsim_sim::explain),
    ``warnings`` for known traps, each with the key, and ``notes`` (as
    ``notes``: a scheme that clears CE before an ECN-driven transport sees
    it). Raises ScenarioError if the scenario is invalid."""
    sc = load_scenario(scenario)
    return json.loads(native(_lbsim.explain, sc.text, _sets(seed, set), sc.base_dir))


def validate(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None, allow_long: bool = False) -> dict:
    """Raises ScenarioError (with ``.field``) if the scenario is invalid:
    checks everything a run does before its first event, and refuses work
    estimated at more than a day unless ``allow_long``. Returns ``explain``'s
    dict."""
    sc = load_scenario(scenario)
    text = native(_lbsim.explain, sc.text, _sets(seed, set), sc.base_dir)
    if not allow_long:
        native(_lbsim.check_long, text)
    return json.loads(text)


def notes(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> list[dict]:
    """The notes ``validate``, ``run`` and ``compare`` print for a scenario,
    each a dict with ``key`` and ``message``: a scheme that clears CE before
    an ECN-driven transport (DCTCP) sees it, and the parameter that lets the
    marks through (``explain``'s ``notes``). Reads the scenario only."""
    sc = load_scenario(scenario)
    return json.loads(native(_lbsim.scheme_notes, sc.text, _sets(seed, set)))


def explanation_lines(e: Mapping[str, Any]) -> list[str]:
    """``explain``'s dict as the lines ``lbsim validate`` and ``lbsim run`` print."""
    t, w, st, est = e["topology"], e["workload"], e["sim_time"], e["estimate"]
    out = [f"topology {t['kind']}: {t['hosts']} hosts, {t['switches']} switches, {t['links']} links, {t['racks']} racks; "
           f"base RTT {t['base_rtt_us']:.1f} us; scheme {e['scheme']}, seed {e['seed']}"]
    if w.get("capacity_gbps") is not None:
        out.append(f"load {w['load']:.3g} of {w['load_of']} = {w['offered_gbps']:.4g} Gb/s offered of {w['capacity_gbps']:.4g} Gb/s "
                   f"({w['capacity_definition']})")
    wl = f"workload {w['kind']}: {w['flows']} flows, {w['bytes'] / 1e6:.4g} MB"
    if w["flows"]:
        wl += f", starts {w['first_start_ms']:.4g} to {w['last_start_ms']:.4g} ms"
    if w.get("incast_requests") is not None:
        wl += f"; {w['incast_requests']} incast requests"
    if w.get("udp_sources"):
        wl += f"; {w['udp_sources']} UDP sources"
    out.append(wl)
    loaded = [r for r in e["racks"] if r["out_gbps"] or r["in_gbps"]]
    if loaded:
        worst = max(loaded, key=lambda r: max(r["uplink_load"], r["downlink_load"]))
        out.append("per-rack offered load (of uplinks / downlinks): " + ", ".join(
            f"{r['leaf']} {r['uplink_load']:.2f}/{r['downlink_load']:.2f}" for r in loaded[:16])
            + (f", ... (highest: {worst['leaf']})" if len(loaded) > 16 else ""))
    out.append(f"simulated time: expected {st['expected_ms']:.4g} ms (stops by {st['stop_ms']:.4g} ms, {st['stop_by']})")
    out.append(f"estimate: {est['events']:.3g} events, {est['wall']} of wall time, {est['peak_rss_mb']:.0f} MB peak memory "
               f"(simulator; rough: lbsim_sim::explain)")
    for x in e["warnings"]:
        out.append(f"warning: {x['message']}")
    for x in e.get("notes", []):
        out.append(f"note: {x['message']}")
    return out


def schemes() -> list[dict]:
    """Every load-balancing scheme with its parameters, defaults and the
    paper section it follows."""
    return _lbsim.schemes()


__all__ = ["LbsimError", "LongRunWarning", "Result", "ScenarioError", "explain", "explanation_lines", "flows", "flows_csv", "load_scenario", "notes",
           "read_text", "run", "schemes", "validate"]
