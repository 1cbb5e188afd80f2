"""The Python API: scenarios in, tables out."""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq

from lbsim import _lbsim
from lbsim._lbsim import ScenarioError

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


def resolved_scenario(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> str:
    """The scenario as a run sees it: the file with every ``--set`` override
    and the seed applied, as TOML (written beside results as scenario.toml;
    relative file paths are made absolute so it replays from anywhere)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    sc = load_scenario(scenario)
    d = tomllib.loads(sc.text)
    for kv in _sets(seed, set):
        key, _, value = kv.partition("=")
        try:
            v = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:  # a bare word is a string, as the Rust side reads it
            v = value.strip()
        t = d
        parts = key.strip().split(".")
        for part in parts[:-1]:
            t = t.setdefault(part, {})
        t[parts[-1]] = v
    wl = d.get("workload", {})
    for k in ("flow_list", "cdf_file"):
        if isinstance(wl.get(k), str) and sc.base_dir and not os.path.isabs(wl[k]):
            wl[k] = os.path.normpath(os.path.join(sc.base_dir, wl[k]))
    return _dumps_toml(d)


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

    ``flows``, ``links``, ``queues``, ``ports`` are pandas DataFrames (the
    Arrow tables are in ``tables``); ``summary`` is a dict (also written as
    summary.json).
    """

    tables: dict[str, pa.Table]
    summary: dict[str, Any]
    _df: dict[str, Any] = field(default_factory=dict, repr=False)

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
    ports = _table_property("ports")

    def write(self, out_dir: Union[str, os.PathLike]) -> Path:
        """Writes flows.parquet, summary.json and (if sampled) links.parquet,
        queues.parquet, flow_rates.parquet, cwnd.parquet (removing an earlier run's when
        this one has none), plus ports.parquet. Same scenario and seed give
        byte-identical flows.parquet."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        for name in _SCHEMAS:
            t = self.tables[name]
            if name == "pcap":
                # captured packets go out as pcap files, not as a table
                for old in d.glob("*.pcap"):
                    old.unlink()
                if t.num_rows:
                    from lbsim.pcap import write_pcaps

                    write_pcaps(t.to_pandas(), d)
                continue
            if name in ("links", "queues", "flow_rates", "scheme_samples", "cwnd") and t.num_rows == 0:
                (d / f"{name}.parquet").unlink(missing_ok=True)  # no stale samples from an earlier run
                continue
            tmp = d / f".{name}.parquet.tmp"
            pq.write_table(t, tmp, compression="zstd")
            os.replace(tmp, d / f"{name}.parquet")
        tmp = d / ".summary.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, d / "summary.json")
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
) -> Result:
    """Runs a scenario (path, TOML text or dict).

    ``set`` takes ``"key=value"`` overrides in TOML syntax, e.g.
    ``["workload.load=0.7", "lb.scheme=conga"]``; ``seed`` overrides the
    scenario's seed. ``progress`` is called a few times per second with a
    dict (sim_time_s, flows_done, flows_total, events, wall_s); returning
    False stops the run (KeyboardInterrupt).
    """
    sc = load_scenario(scenario)
    return _result(_lbsim.run(sc.text, _sets(seed, set), sc.base_dir, progress))


def _result(raw: dict) -> Result:
    """A Result from the extension's raw output."""
    return Result(tables={name: _table(name, raw[name]) for name in _SCHEMAS}, summary=json.loads(raw["summary_json"]))


def flows(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None):
    """The flow list a scenario generates, as a DataFrame (src, dst,
    size_bytes, start_us); identical whatever the load-balancing scheme."""
    import pandas as pd

    sc = load_scenario(scenario)
    text = _lbsim.flows_csv(sc.text, _sets(seed, set), sc.base_dir)
    return pd.read_csv(io.StringIO(text))


def flows_csv(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> str:
    sc = load_scenario(scenario)
    return _lbsim.flows_csv(sc.text, _sets(seed, set), sc.base_dir)


def validate(scenario: ScenarioLike, *, seed: Optional[int] = None, set: Optional[Sequence[str]] = None) -> None:
    """Raises ScenarioError (with ``.field``) if the scenario is invalid:
    checks everything a run does before its first event."""
    sc = load_scenario(scenario)
    _lbsim.validate(sc.text, _sets(seed, set), sc.base_dir)


def schemes() -> list[dict]:
    """Every load-balancing scheme with its parameters, defaults and the
    paper section it follows."""
    return _lbsim.schemes()


__all__ = ["Result", "ScenarioError", "flows", "flows_csv", "load_scenario", "read_text", "run", "schemes", "validate"]
