"""Sweep files, the results catalog and the runners (process pool or Ray).

A sweep file (``experiments/<name>.toml``) holds a base scenario, the axes
swept, how axis values map to scenario keys, conditional overrides, a
``--quick`` variant, and the figures and paper claims built from the runs::

    [experiment]
    name = "conga_fig9"
    title = "..."
    [base]                      # a complete scenario
    ...
    [axes]                      # cartesian product
    scheme = ["ecmp", "conga"]
    load = [0.1, 0.5, 0.9]
    seed = [1, 2, 3]
    [keys]                      # axis -> scenario key, for plain values
    load = "workload.load"
    seed = "seed"
    [options.scheme.conga_flow] # or: named override sets per axis value
    "lb.scheme" = "conga_flow"
    [[rule]]                    # overrides when several axes match
    match = { scheme = "presto", fabric = "asymmetric" }
    set = { "lb.params.weights" = "topology" }
    [[exclude]]                 # points not run: every key matches (a list: any of)
    fabric = "infinite"
    scheme = ["conga", "clove_ecn"]
    [quick]                     # --quick: replaced axes and extra overrides
    axes = { load = [0.5], seed = [1] }
    set = { "workload.flows" = 1000 }

docs/sweeps.md documents every section and key, and the figure and claim
kinds; ``spec.SECTIONS`` declares them, and ``load`` refuses any other
section.

**Catalog.** Each run lives in ``<root>/<experiment>/runs/<hash>/`` where
the hash covers the complete resolved scenario, the contents of the files
it reads (``workload.flow_list``, ``workload.cdf_file``) and the lbsim
version, so a changed parameter or input file never reuses a stale result.
A run is written to a temporary folder and renamed into place when
complete: a killed worker leaves no half result, only a temporary folder
that the next invocation removes before redoing that run. Local workers die
with the sweep process, even one killed by SIGKILL. ``index.parquet`` lists
every run of the sweep (axes, hash, the scheme and model revision it ran
under, headline metrics) and loads as one table. A run is stale when the
model revision or its scheme's revision has moved since (``stale_rows``):
its hash changes, and a run found in the catalog recording another
revision is run again.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import time
import tomllib
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from lbsim.errors import LbsimError


class SweepError(LbsimError, ValueError):
    """A bad sweep file or ``lbsim reproduce`` request (one line naming it)."""


@dataclass
class Point:
    """One run of a sweep: its axis values and resolved scenario."""

    axes: dict[str, Any]
    scenario: dict[str, Any]
    text: str
    hash: str
    # a seed beyond the seed axis ([[added_seeds]]): read by the claims, not drawn
    added: bool = False


@dataclass
class Sweep:
    name: str
    path: Path
    spec: dict[str, Any]
    quick: bool = False
    points: list[Point] = field(default_factory=list)
    # axis values -> the point (its scenario resolved as ``load`` does)
    build: Optional[Callable[[dict[str, Any]], Point]] = field(default=None, repr=False)

    def add_seeds(self, where: dict[str, Any], seeds: list[int]) -> list[Point]:
        """Adds, for every point ``where`` selects (every axis named
        matches; a list: any of), the same point with each of ``seeds``
        that it lacks; returns the points added."""
        if "seed" not in self.spec["axes"]:
            raise SweepError(f"{self.path}: added seeds need a seed axis")
        have = {_axes_key(p.axes) for p in self.points}
        added = []
        for p in list(self.points):
            if not _selected(where, p.axes):
                continue
            for s in seeds:
                axes = {**p.axes, "seed": s}
                if _axes_key(axes) not in have:
                    have.add(_axes_key(axes))
                    assert self.build is not None
                    pt = self.build(axes)
                    pt.added = True
                    added.append(pt)
        self.points += added
        return added

    @property
    def title(self) -> str:
        return self.spec.get("experiment", {}).get("title", self.name)

    @property
    def catalog_name(self) -> str:
        return self.name + ("-quick" if self.quick else "")


def _set_key(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
        if not isinstance(d, dict):
            raise SweepError(f"{dotted}: {p} is not a table")
    d[parts[-1]] = copy.deepcopy(value)


def _apply(d: dict, overrides: dict) -> None:
    for k, v in overrides.items():
        _set_key(d, k, v)


def scheme_of(scenario: dict) -> str:
    """The load-balancing scheme a scenario runs."""
    return scenario.get("lb", {}).get("scheme", "ecmp")


def revision_of(scenario: dict) -> str:
    """The model revision a scenario's results depend on: the simulator's,
    with the revision of the scheme it uses (``lbsim_lb::SchemeInfo``)."""
    from lbsim import _lbsim

    return _lbsim.model_revision(scheme_of(scenario))


def _version(scenario: dict) -> str:
    """What a run's results depend on besides its scenario: the simulator's
    version and the model revision of the scheme it uses."""
    from lbsim import _lbsim

    return f"{_lbsim.__version__}+{revision_of(scenario)}"


def _axes_key(axes: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in axes.items()))


def _selected(where: dict[str, Any], axes: dict[str, Any]) -> bool:
    """Every axis ``where`` names takes its value (a list: one of them)."""
    for k, v in where.items():
        opts = v if isinstance(v, list) else [v]
        pv = axes.get(k)
        if not any(pv == o or (isinstance(o, float) and isinstance(pv, (int, float)) and abs(float(pv) - o) < 1e-9) for o in opts):
            return False
    return True


def _file_digests(sc: dict, base: Path, cache: dict[Path, str]) -> dict[str, str]:
    """SHA-256 of each file the scenario reads, resolved as the simulator
    does (relative paths from the sweep file's folder); ``cache`` spares
    re-reading a file shared by many points."""
    w = sc.get("workload")
    out: dict[str, str] = {}
    if not isinstance(w, dict):
        return out
    for key in ("flow_list", "cdf_file"):
        f = w.get(key)
        if not isinstance(f, str):
            continue
        path = base / f
        if path not in cache:
            h = hashlib.sha256()
            try:
                with open(path, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                cache[path] = h.hexdigest()
            except OSError:
                cache[path] = "unreadable"  # the check before the runs names it
        out[f"workload.{key}"] = cache[path]
    return out


def load(path: str | os.PathLike, quick: bool = False) -> Sweep:
    """Reads a sweep file and expands its points."""
    from lbsim._api import read_text

    p = Path(path)
    try:
        spec = tomllib.loads(read_text(p, "sweep file", SweepError))
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{p}: not valid TOML: {e}") from None
    _check_sections(p, spec)
    name = spec["experiment"].get("name") or p.stem
    axes = dict(spec["axes"])
    extra: dict[str, Any] = {}
    if quick:
        if "quick" not in spec:
            raise SweepError(f"{p}: --quick needs a [quick] section (this sweep has none)")
        q = spec["quick"]
        for k, v in q.get("axes", {}).items():
            if k not in axes:
                raise SweepError(f"{p}: [quick].axes.{k} is not an axis")
            axes[k] = v
        extra = q.get("set", {})
    keys = spec.get("keys", {})
    options = spec.get("options", {})
    rules = spec.get("rule", [])
    for a, vals in axes.items():
        if not isinstance(vals, list) or not vals:
            raise SweepError(f"{p}: axis {a} must be a non-empty list")
        kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__ for v in vals}
        if len(kinds) > 1:
            raise SweepError(f"{p}: axis {a} mixes {' and '.join(sorted(kinds))} values; write them all as strings (\"100\", \"adaptive\")")
        for v in vals:
            if str(v) not in options.get(a, {}) and a not in keys:
                raise SweepError(f"{p}: axis {a} value {v!r} has no [options.{a}.{v}] and no [keys].{a}")
    _check_selectors(p, spec, axes)
    excludes = spec.get("exclude", [])
    for i, ex in enumerate(excludes):
        for k in ex:
            if k not in axes:
                raise SweepError(f"{p}: [[exclude]] #{i + 1}: {k} is not an axis")
    base_dir = p.resolve().parent
    digests: dict[Path, str] = {}

    def build(pt: dict[str, Any]) -> Point:
        import tomli_w

        sc = copy.deepcopy(spec["base"])
        for a, v in pt.items():
            opt = options.get(a, {}).get(str(v))
            if opt is not None:
                _apply(sc, opt)
            else:
                _set_key(sc, keys[a], v)
        for r in rules:
            if all(pt.get(k) == v for k, v in r["match"].items()):
                _apply(sc, r["set"])
        _apply(sc, extra)
        text = tomli_w.dumps(sc)
        key = _version(sc) + "\n" + json.dumps(sc, sort_keys=True)
        files = _file_digests(sc, base_dir, digests)
        if files:  # (points reading no file keep their hash)
            key += "\n" + json.dumps(files, sort_keys=True)
        h = hashlib.sha256(key.encode()).hexdigest()[:20]
        return Point(axes=dict(pt), scenario=sc, text=text, hash=h)

    sw = Sweep(name=name, path=p, spec=spec, quick=quick, build=build)
    names = list(axes)
    for combo in itertools.product(*(axes[a] for a in names)):
        pt = dict(zip(names, combo))
        if any(all(pt[k] in (v if isinstance(v, list) else [v]) for k, v in ex.items()) for ex in excludes):
            continue
        sw.points.append(build(pt))
    if not quick:  # the seeds `reproduce --until` added (the quick variant has its own)
        for i, a in enumerate(spec.get("added_seeds", [])):
            _check_added_seeds(p, i, a, axes)
            sw.add_seeds(a.get("where", {}), a["seeds"])
    return sw


def _check_added_seeds(p: Path, i: int, entry: dict, axes: dict) -> None:
    where = f"{p}: [[added_seeds]] #{i + 1}"
    if "seed" not in axes:
        raise SweepError(f"{where}: the sweep has no seed axis")
    for k in entry:
        if k not in ("where", "seeds", "why"):
            raise SweepError(f"{where}: unknown key {k} (where, seeds, why)")
    seeds = entry.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise SweepError(f"{where}: seeds must be a non-empty list of integers")
    for k in entry.get("where", {}):
        if k not in axes or k == "seed":
            raise SweepError(f"{where}: where.{k} is not an axis other than seed")


def _check_sections(p: Path, spec: dict) -> None:
    """Every top-level section is one of SECTIONS, in its shape ([x] or
    [[x]]), and the required ones are there."""
    from lbsim.experiments.spec import SECTIONS

    for k, v in spec.items():
        sect = SECTIONS.get(k)
        if sect is None:
            what = (f"section [{k}]" if isinstance(v, dict) else f"section [[{k}]]" if isinstance(v, list)
                    else f"top-level key {k}")
            raise SweepError(f"{p}: unknown {what}; a sweep file has "
                             + ", ".join(s.written.format(n) for n, s in SECTIONS.items()))
        if sect.array and not (isinstance(v, list) and all(isinstance(e, dict) for e in v)):
            raise SweepError(f"{p}: {k} must be an array of tables: write [[{k}]]")
        if not sect.array and not isinstance(v, dict):
            raise SweepError(f"{p}: {k} must be a table: write [{k}]")
    for k, sect in SECTIONS.items():
        if sect.required and k not in spec:
            raise SweepError(f"{p}: missing {sect.written.format(k)}")


def _kind(v: Any) -> str:
    return "number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__


def _check_selectors(p: Path, spec: dict, axes: dict) -> None:
    """Every axis value a figure, claim, rule, exclusion or [quick] names
    has the type of that axis's values: a 1000 against an axis of strings
    would select no run at all (a figure with no line, a claim of NaN)."""
    full = spec["axes"]

    def check(where: str, sel: Any) -> None:
        if not isinstance(sel, dict):
            return
        for k, v in sel.items():
            if k not in full:
                continue
            want = {_kind(x) for x in full[k]}
            for x in v if isinstance(v, list) else [v]:
                if _kind(x) not in want:
                    raise SweepError(f"{p}: {where}.{k} = {x!r} is a {_kind(x)}, but axis {k} has {' and '.join(sorted(want))} values")

    check("[quick].axes", {k: v for k, v in spec.get("quick", {}).get("axes", {}).items()})
    for i, fig in enumerate(spec.get("figure", [])):
        check(f"[[figure]] {fig.get('id', i + 1)}: where", fig.get("where"))
    for i, c in enumerate(spec.get("claim", [])):
        for part in ("where", "a", "b", "c", "d", "base", "x", "best"):
            check(f"[[claim]] #{i + 1}: {part}", c.get(part))
    for i, r in enumerate(spec.get("rule", [])):
        check(f"[[rule]] #{i + 1}: match", r.get("match"))
    for i, ex in enumerate(spec.get("exclude", [])):
        check(f"[[exclude]] #{i + 1}", ex)
    for i, a in enumerate(spec.get("added_seeds", [])):
        check(f"[[added_seeds]] #{i + 1}: where", a.get("where"))


# ---------------------------------------------------------------- running


def _run_point(args: tuple[str, Optional[str], str]) -> dict:
    """Runs one scenario into ``run_dir`` atomically (a temporary folder
    renamed into place) and returns its summary. Top-level so that process
    pools and Ray can ship it."""
    text, base_dir, run_dir = args
    from lbsim import _api, _lbsim
    from lbsim.errors import native

    final = Path(run_dir)
    if (final / "summary.json").exists():
        return json.loads((final / "summary.json").read_text())
    tmp = final.parent / f"{final.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    res = _api._result(native(_lbsim.run, text, [], base_dir, None))
    res.write(tmp)
    (tmp / "scenario.toml").write_text(text)
    os.replace(tmp, final)
    return res.summary


def _worker_init() -> None:
    """Runs first in each local worker process: the worker dies with the
    sweep process (Linux: PR_SET_PDEATHSIG, so even after a SIGKILL) and
    leaves Ctrl-C and SIGTERM to it, which stops the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():  # died before prctl
        os._exit(1)


def _run_pool(jobs: list, workers: int, prog: Progress, runs: Path) -> None:
    """Runs the jobs on local worker processes."""
    ex = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
    try:
        futs = {ex.submit(_run_point, j) for j in jobs}
        while futs:
            done, futs = wait(futs, return_when=FIRST_COMPLETED)
            for f in done:
                f.result()
                prog.step()
    except BaseException:
        # Ctrl-C, SIGTERM or a failed run: stop the other runs now rather
        # than waiting for them, and remove their partial results. (The
        # executor has no public way to stop running workers before 3.14.)
        procs = list((getattr(ex, "_processes", None) or {}).values())
        manager = getattr(ex, "_executor_manager_thread", None)
        ex.shutdown(wait=False, cancel_futures=True)
        for pr in procs:
            pr.terminate()
        for pr in procs:
            pr.join()
        # Let the executor's manager thread notice the dead workers and
        # close its wake-up pipe now: otherwise it may close it while the
        # interpreter's exit hook writes to it (CPython 3.11 race, an
        # `OSError: Bad file descriptor` traceback after our error line).
        if manager is not None:
            manager.join(timeout=10)
        clean_partial(runs)
        raise
    ex.shutdown()


def _ray_init(address: str) -> None:
    """Connects to Ray (``local`` starts an instance here). A ``host:port``
    address is probed first: Ray itself retries an unreachable cluster for
    minutes."""
    if address not in ("local", "auto"):
        host, sep, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
        if sep and port.isdigit():
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
            except OSError as e:
                raise SweepError(f"--ray {address}: cannot reach the Ray cluster ({e.strerror or e})") from None
    try:
        import ray
    except ImportError:
        raise SweepError(f"--ray {address}: Ray is not installed (pip install 'ray>=2.9')") from None
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
             include_dashboard=False, log_to_driver=False)


def catalog_dir(root: str | os.PathLike, sw: Sweep) -> Path:
    return Path(root) / sw.catalog_name


def clean_partial(runs: Path) -> int:
    """Removes temporary folders left by killed workers."""
    n = 0
    if runs.exists():
        for d in runs.iterdir():
            if ".tmp-" in d.name:
                shutil.rmtree(d, ignore_errors=True)
                n += 1
    return n


class Progress:
    def __init__(self, total: int, done: int, label: str, quiet: bool = False):
        self.total, self.done, self.label, self.quiet = total, done, label, quiet
        self.t0 = time.perf_counter()
        self.started = done
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def step(self) -> None:
        self.done += 1
        if self.quiet:
            return
        el = time.perf_counter() - self.t0
        ran = self.done - self.started
        left = self.total - self.done
        eta = el / ran * left if ran else float("nan")
        line = f"{self.label}: {self.done}/{self.total} runs, {el:6.0f} s elapsed, ETA {eta:6.0f} s"
        if self.tty:
            sys.stderr.write("\r" + line)
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif el - self.last >= 10 or self.done == self.total:
            self.last = el
            print(line, file=sys.stderr, flush=True)


def run_sweep(sw: Sweep, root: str | os.PathLike = "results", workers: int = 1, ray_address: Optional[str] = None,
              quiet: bool = False) -> Path:
    """Runs every point not already in the catalog; writes the index."""
    cat = catalog_dir(root, sw)
    runs = cat / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    clean_partial(runs)
    base_dir = str(sw.path.resolve().parent)
    todo = [pt for pt in sw.points if not _finished(runs / pt.hash, pt)]
    # the same scenario may appear under two points: run it once
    seen, unique = set(), []
    for pt in todo:
        if pt.hash not in seen:
            seen.add(pt.hash)
            unique.append(pt)
    # every point is checked before any runs, as far as a run goes before
    # its first event; an error names the point by its axes
    from lbsim import _lbsim

    for pt in unique:
        try:
            _lbsim.validate(pt.text, [], base_dir)
        except _lbsim.ScenarioError as e:
            axes = ", ".join(f"{k}={v}" for k, v in pt.axes.items())
            raise SweepError(f"{sw.name}: point ({axes}): {e}") from None
    prog = Progress(len(sw.points), len(sw.points) - len(todo), sw.catalog_name, quiet)
    t0 = time.perf_counter()
    jobs = [(pt.text, base_dir, str(runs / pt.hash)) for pt in unique]
    if ray_address:
        _ray_init(ray_address)
        import ray

        remote = ray.remote(_run_point)
        pending = [remote.remote(j) for j in jobs]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            ray.get(ready)
            prog.step()
    elif workers <= 1:
        try:
            for j in jobs:
                _run_point(j)
                prog.step()
        except BaseException:
            clean_partial(runs)
            raise
    else:
        _run_pool(jobs, workers, prog, runs)
    write_index(sw, cat)
    meta = {"sweep": sw.name, "quick": sw.quick, "runs": len(sw.points), "ran_now": len(unique),
            "wall_s_this_invocation": time.perf_counter() - t0, "workers": "ray" if ray_address else workers}
    hist = cat / "invocations.jsonl"
    with open(hist, "a") as f:
        f.write(json.dumps(meta) + "\n")
    return cat


def _finished(run: Path, pt: Point) -> bool:
    """Whether the run is in the catalog under the model revision its
    scheme has now; a run recording another revision is removed, to be
    run again."""
    sfile = run / "summary.json"
    if not sfile.exists():
        return False
    if json.loads(sfile.read_text()).get("model_revision") == revision_of(pt.scenario):
        return True
    shutil.rmtree(run)
    return False


# the index columns that say which scheme a run used, at which model revision
REVISION_COLUMNS = ("scheme.name", "model_revision")


def stale_rows(index):
    """The rows of a run index whose recorded model revision is not the
    one their scheme has now (every row, when the index records none),
    with the current revision in ``current``."""
    from lbsim import _lbsim

    if not set(REVISION_COLUMNS) <= set(index.columns):
        return index.assign(current=None)
    now = index["scheme.name"].map(_lbsim.model_revision)
    old = index["model_revision"] != now
    return index[old].assign(current=now[old])  # (a whole Series on no rows would add its rows)


def _flatten(prefix: str, d: Any, out: dict) -> None:
    if isinstance(d, dict):
        for k, v in d.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(d, (int, float, str, bool)) or d is None:
        out[prefix] = d


def write_index(sw: Sweep, cat: Path) -> Path:
    """One row per point: axes, hash, and the summary's scalar metrics."""
    import pandas as pd

    rows = []
    for pt in sw.points:
        sfile = cat / "runs" / pt.hash / "summary.json"
        if not sfile.exists():
            continue
        s = json.loads(sfile.read_text())
        row: dict[str, Any] = {f"axis.{k}": v for k, v in pt.axes.items()}
        row["hash"] = pt.hash
        flat: dict[str, Any] = {"scheme.name": s["scheme"]["name"], "model_revision": s["model_revision"]}
        for k in ("fct_us", "slowdown", "flows", "network", "transport", "incast", "conservation", "sim_time_s", "events", "wall_s"):
            if k in s:
                _flatten(k, s[k], flat)
        for b in s.get("buckets", []):
            _flatten(f"bucket[{b['bucket']}]", {"fct_us": b["fct_us"], "completed": b["completed"]}, flat)
        row.update({k: v for k, v in flat.items() if not isinstance(v, str) or k.startswith("transport.cc") or k in REVISION_COLUMNS})
        rows.append(row)
    df = pd.DataFrame(rows)
    out = cat / "index.parquet"
    tmp = cat / ".index.parquet.tmp"
    df.to_parquet(tmp, index=False)
    os.replace(tmp, out)
    return out


def load_index(root: str | os.PathLike, sw: Sweep):
    """The sweep's index as a DataFrame (axis columns renamed without 'axis.')."""
    import pandas as pd

    df = pd.read_parquet(catalog_dir(root, sw) / "index.parquet")
    return df.rename(columns={c: c[5:] for c in df.columns if c.startswith("axis.")})


def run_path(root: str | os.PathLike, sw: Sweep, pt: Point) -> Path:
    return catalog_dir(root, sw) / "runs" / pt.hash
