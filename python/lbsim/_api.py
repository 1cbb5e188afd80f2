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

    @property
    def flows(self):
        """One row per flow: flow_id, src, dst, size_bytes, start_us, finish_us,
        fct_us, ideal_fct_us, slowdown, completed, started, retransmits,
        timeouts, reorder_events (data segments arriving above the next
        expected byte), duplicate_segments (segments the receiver already
        had: spurious retransmissions), fast_recoveries_reordering /
        fast_recoveries_loss (fast recoveries whose resent segment had not /
        had been dropped: simulator truth), path_changes (data segments
        that left the source leaf by another uplink than the previous one)
        and uplinks_used (distinct source-leaf uplinks), incast_request (-1
        if none), class (the flow's workload.classes name; "all" without).
        Unfinished flows have NaN finish/fct and completed = False; flows
        whose arrival came after the run stopped have started = False.
        Counters are signed 64-bit integers."""
        return self._frame("flows")

    @property
    def links(self):
        """Throughput samples: t_ms (window end), port, bytes in the window,
        gbps and utilisation (of the port's rate) over the window."""
        return self._frame("links")

    @property
    def queues(self):
        """Queue samples: t_us, port, qlen_pkts, qlen_bytes."""
        return self._frame("queues")

    @property
    def flow_rates(self):
        """Receive-side goodput per flow (``metrics.flow_rate_window_ms``):
        t_ms (window end), flow_id, bytes newly in order at the receiving
        transport in the window, gbps."""
        return self._frame("flow_rates")

    @property
    def scheme_samples(self):
        """The scheme's state every ``metrics.scheme_sample_interval_us``:
        t_us, metric, a, b, value (AG: granularity_pkts and congested_paths
        with a = source leaf, b = destination leaf; owd_us with b =
        destination leaf x 64 + path, only while AG still uses it, and
        beside it true_owd_us, the simulator's delay for a full-size packet
        entering that uplink at that instant)."""
        return self._frame("scheme_samples")

    @property
    def cwnd(self):
        """Congestion windows every ``metrics.cwnd_sample_interval_us``: t_us,
        flow_id, conn (an MPTCP subflow is its own connection), cwnd_bytes,
        ssthresh_bytes (-1 before the first reduction: "infinite"); only
        connections whose flow is not yet delivered in full."""
        return self._frame("cwnd")

    @property
    def ports(self):
        """Every egress port's totals at the end of the run."""
        return self._frame("ports")

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


_SCHEMAS = {
    # counters are signed, so differences computed in pandas never wrap
    "flows": {
        "flow_id": pa.int64(), "src": pa.int64(), "dst": pa.int64(), "size_bytes": pa.int64(),
        "start_us": pa.float64(), "finish_us": pa.float64(), "fct_us": pa.float64(),
        "ideal_fct_us": pa.float64(), "slowdown": pa.float64(), "completed": pa.bool_(), "started": pa.bool_(),
        "retransmits": pa.int64(), "timeouts": pa.int64(), "reorder_events": pa.int64(),
        "duplicate_segments": pa.int64(),
        "fast_recoveries_reordering": pa.int64(), "fast_recoveries_loss": pa.int64(),
        "path_changes": pa.int64(), "uplinks_used": pa.int64(),
        "incast_request": pa.int64(), "class": pa.string(),
    },
    "ports": {
        "port": pa.string(), "rate_gbps": pa.float64(), "tx_pkts": pa.int64(), "tx_bytes": pa.int64(),
        "drops": pa.int64(), "ecn_marks": pa.int64(), "max_qlen_pkts": pa.int64(), "up": pa.bool_(),
    },
    "links": {"t_ms": pa.float64(), "port": pa.string(), "bytes": pa.int64(), "gbps": pa.float64(), "utilisation": pa.float64()},
    "queues": {"t_us": pa.float64(), "port": pa.string(), "qlen_pkts": pa.int64(), "qlen_bytes": pa.int64()},
    "cwnd": {"t_us": pa.float64(), "flow_id": pa.int64(), "conn": pa.int64(), "cwnd_bytes": pa.int64(), "ssthresh_bytes": pa.int64()},
    "flow_rates": {"t_ms": pa.float64(), "flow_id": pa.int64(), "bytes": pa.int64(), "gbps": pa.float64()},
    "scheme_samples": {"t_us": pa.float64(), "metric": pa.string(), "a": pa.int64(), "b": pa.int64(), "value": pa.float64()},
    "pcap": {"t_ps": pa.int64(), "port": pa.string(), "src": pa.int64(), "dst": pa.int64(), "sport": pa.int64(), "dport": pa.int64(),
             "outer_sport": pa.int64(), "kind": pa.string(), "size": pa.int64(), "ttl": pa.int64(), "ect": pa.bool_(), "ce": pa.bool_(),
             "seq": pa.int64(), "ack": pa.int64(), "flags": pa.int64(), "wnd": pa.int64(), "len": pa.int64()},
}


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
