"""``lbsim plot``: the figures a researcher draws first, for one run or to
compare several (folders written by ``lbsim run --out`` or sweep runs).

A *series* is one run, labelled "folder (scheme)"; with ``group="scheme"``
(``lbsim plot --group scheme``) the runs that share ``scheme.name`` in
summary.json (e.g. seeds of one scheme) form one series instead; ``lbsim
compare`` groups its runs by arm and labels a run "arm, seed N". Series keep
one colour across figures. A group's statistics are over its runs, one
value per run: over seeds where its runs' seeds differ (as in a compare),
never over iterations or flows pooled across runs.

- ``fct_cdf.png``: CDF of flow completion times (log time axis), one line
  per series. The y axis is the fraction of *all* the run's flows completed
  within x, so a run that left flows unfinished levels off below 1 (and says
  how many in the legend) instead of looking fast. A group draws the median
  over its runs of each quantile, with a band: min-max over the runs (10-90 %
  from 10 runs on). The CSV has p50/p90/p99 per run, of completed flows as in
  summary.json (``fct_ms``) and of all flows (``fct_ms_all_flows``, inf when
  the quantile was never reached).
- ``fct_by_size.png``: mean and p99 FCT (two panels) per size bucket, bars
  per series; ``slowdown_by_size.png``: the same for slowdown (FCT / ideal
  FCT). Buckets are summary.json's ``buckets`` (``metrics.size_buckets_bytes``;
  < 100 KB, 100 KB - 10 MB, > 10 MB by default), percentiles nearest-rank
  as in summary.json; under each bucket its flows per run. A group's bar is
  the mean of its runs' values with the 95 % Student t interval over them
  (``lbsim.stats.mean_interval``, as compare's own values) and a dot per
  run; a single run's bar is its value.
- With a baseline (``lbsim compare``'s), every bar figure has a second row:
  each other group against the baseline, per category, paired by seed: its
  value / the baseline's in each seed (dots) and the estimate and 95 %
  interval ``lbsim.compare.paired_rows`` gives, the one compare.json
  reports for that metric (``fct_mean_ms`` and ``fct_p99_ms`` of a bucket
  are compare's ``fct_mean[bucket]`` and ``fct_p99[bucket]``; slowdown per
  bucket has no verdict but the same estimator). Where compare would judge
  the difference instead (the baseline 0 in a seed), the panel says so and
  the CSV holds the difference.
- ``link_utilisation.png``: one panel per series that has links.parquet
  (``metrics.link_samplers``), titled by scheme (or arm) with its seeds,
  ports and window, shared axes. Per run, the mean utilisation over the
  sampled ports as a step line coloured by seed, with a band from the least
  to the most loaded port in each window (``link_utilisation_bands.csv``);
  when every panel holds one run with at most 10 ports, one line per port
  instead.
- ``flow_goodput.png``: one row per run that has flow_rates.parquet
  (``metrics.flow_rate_window_ms``): the aggregate receive-side goodput of all
  flows (left) and the goodput of the 5 largest flows, labelled by id and
  size (right); windows without delivered bytes count as 0 (stalls show).
- ``job_iteration_time.png`` and ``job_busbw.png``, for runs with
  collective jobs (jobs.parquet): per job, bars per series of each run's
  mean over its completed iterations (summary.json's
  ``jobs[].iteration_us.mean`` and ``jobs[].busbw_gbps.mean``), a group's
  bar and its paired row as for the size buckets; the ideal dashed (and
  90 % of the ideal busbw dotted).
- Link failures and restores (``[[failures]]`` ``at_ms`` / ``restore_ms`` and
  ``[[random_failures]]`` from the run folder's resolved scenario.toml) are
  dashed red (down) and dotted green (restored) vertical lines on every time
  axis, in the panel of the runs they belong to, and listed in
  ``failures.csv`` (one ``none`` row for a run without failures).

Each figure's numbers are written as CSV beside it, with rows for every run
and ``run`` (folder name; the path below the common parent when two folders
share a name), ``scheme``, ``seed`` and ``group`` columns; with groups,
``*_groups.csv`` hold every interval drawn: the category (``bucket`` or
``job``), ``stat`` (the per-run column), ``basis`` (``value``: the group's
mean over its runs; ``ratio`` or ``difference``: against ``baseline``),
``n`` (runs with a value; seeds with a value in both, for a paired row),
``estimate``, ``ci_low``, ``ci_high`` and ``method`` (as compare.json's),
``n_runs``, and ``run`` and ``seed`` listing the group's runs,
";"-separated.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from lbsim.stats import mean_interval, nearest_rank

# (min_bytes, max_bytes, label): a flow of s bytes is in [min, max)
DEFAULT_BUCKETS = [(0, 100_000, "<100KB"), (100_000, 10_000_000, "100KB-10MB"), (10_000_000, math.inf, ">10MB")]

TOP_FLOWS = 5
MAX_PORT_LINES = 10


def _human_bytes(b: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{int(b)} B"


def _load_toml(path: Path) -> dict:
    return tomllib.loads(path.read_text())


@dataclass
class Run:
    path: Path
    name: str
    summary: dict
    scenario: dict
    flows: pd.DataFrame
    failures: list = field(default_factory=list)  # dicts: link, event ("down" / "up"), t_ms, source
    group: str = ""
    title: str = ""  # set where the folder name says nothing (a compare's run hashes): "arm, seed N"

    @property
    def scheme(self) -> str:
        return self.summary.get("scheme", {}).get("name", "") or ""

    @property
    def seed(self):
        return self.summary.get("seed", self.scenario.get("seed", ""))

    @property
    def label(self) -> str:
        if self.title:
            return self.title
        return f"{self.name} ({self.scheme})" if self.scheme else self.name

    def ids(self) -> dict:
        """The columns every CSV row about this run starts with."""
        return {"run": self.name, "scheme": self.scheme, "seed": self.seed, "group": self.group}

    def buckets(self) -> Optional[list]:
        b = self.summary.get("buckets")
        if not b:
            return None
        return [(x["min_bytes"], math.inf if x.get("max_bytes") is None else x["max_bytes"], x["bucket"]) for x in b]


def _failures(scenario: dict, summary: dict) -> list:
    """Failure and restore events of a run: ``[[failures]]`` and
    ``[[random_failures]]`` (whose drawn links summary.json lists in order)."""
    ev = []
    for f in scenario.get("failures", []) or []:
        link = str(f.get("link", "?"))
        ev.append({"link": link, "event": "down", "t_ms": float(f.get("at_ms", 0.0)), "source": "failures"})
        if f.get("restore_ms") is not None:
            ev.append({"link": link, "event": "up", "t_ms": float(f["restore_ms"]), "source": "failures"})
    drawn = list(summary.get("topology", {}).get("random_failures", []) or [])
    off = 0
    for f in scenario.get("random_failures", []) or []:
        count = int(f.get("count", 0))
        links = drawn[off:off + count] or [f"random {f.get('tier', '?')} pod {f.get('pod', '?')}"]
        off += count
        for link in links:
            ev.append({"link": str(link), "event": "down", "t_ms": float(f.get("at_ms", 0.0)), "source": "random_failures"})
    if not scenario:  # no resolved scenario.toml: down links without their time
        for link in summary.get("topology", {}).get("links_down_at_end", []) or []:
            ev.append({"link": str(link), "event": "down", "t_ms": math.nan, "source": "links_down_at_end"})
    return ev


def load_runs(paths: list[Path]) -> list[Run]:
    for p in paths:
        if not (p / "flows.parquet").exists():
            raise FileNotFoundError(f"{p}: no flows.parquet (not a folder written by lbsim run --out)")
    names = [p.name for p in paths]
    if len(set(names)) < len(names):  # e.g. out/a/run and out/b/run: name them by what differs
        root = os.path.commonpath([str(p.resolve()) for p in paths])
        names = [os.path.relpath(str(p.resolve()), root) for p in paths]
    runs = []
    for p, name in zip(paths, names):
        summary = json.loads((p / "summary.json").read_text()) if (p / "summary.json").exists() else {}
        scenario = _load_toml(p / "scenario.toml") if (p / "scenario.toml").exists() else {}
        runs.append(Run(p, name, summary, scenario, pd.read_parquet(p / "flows.parquet"), _failures(scenario, summary)))
    return runs


@dataclass
class Series:
    label: str
    runs: list
    color: str
    linestyle: str = "-"


def make_series(runs: list[Run], group: Optional[str], groups: Optional[dict] = None) -> list[Series]:
    import matplotlib

    cycle = matplotlib.colormaps["tab10"].colors
    styles = ["-", "--", "-.", ":"]
    keyed: dict[str, list[Run]] = {}
    for r in runs:
        if groups is not None:
            r.group = groups.get(r.path, r.name)
            r.title = f"{r.group}, seed {r.seed}"
        else:
            r.group = (r.scheme or r.name) if group == "scheme" else r.name
        keyed.setdefault(r.group, []).append(r)
    out = []
    for i, (key, rs) in enumerate(keyed.items()):
        if group and len(rs) > 1:
            label = f"{key} ({len(rs)} {_over([Series('', rs, '')])})"
            seeds = [r.seed for r in rs]
            if len(set(map(str, seeds))) < len(seeds):
                print(f"lbsim plot: note: group {key}: runs {', '.join(r.name for r in rs)} share a seed; "
                      "they differ in more than the seed", file=sys.stderr)
        else:
            label = rs[0].label if not group else f"{key} (1 run)"
        out.append(Series(label, rs, cycle[i % len(cycle)], styles[(i // len(cycle)) % len(styles)]))
    return out


def _over(series: list[Series]) -> str:
    """What a group's statistics are over: "seeds" where every group's runs
    have distinct seeds, else "runs"."""
    return "seeds" if all(len({str(r.seed) for r in s.runs}) == len(s.runs) for s in series) else "runs"


def _group_ids(s: Series) -> dict:
    return {"run": ";".join(r.name for r in s.runs), "scheme": ";".join(sorted({r.scheme for r in s.runs})),
            "seed": ";".join(str(r.seed) for r in s.runs), "group": s.runs[0].group, "n_runs": len(s.runs)}


def _mark_failures(ax, events: list, handles: dict) -> None:
    """Vertical lines at failure (red, dashed) and restore (green, dotted)
    times (``Run.failures`` dicts, of one run or of a panel's runs), one per
    time and kind, named at the top of the axes."""
    import matplotlib.transforms as mtransforms

    at: dict[tuple, set] = {}
    for e in events:
        if np.isfinite(e["t_ms"]):
            at.setdefault((e["t_ms"], e["event"]), set()).add(e["link"])
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for (t, event), links in sorted(at.items()):
        down = event == "down"
        line = ax.axvline(t, color="tab:red" if down else "tab:green", ls="--" if down else ":", lw=1.2, zorder=5)
        handles.setdefault("link down" if down else "link restored", line)
        text = next(iter(links)) if len(links) == 1 else f"{len(links)} links"
        ax.text(t, 0.98, f" {text} {'down' if down else 'up'}", transform=trans, rotation=90, va="top", ha="right",
                fontsize=6, color=line.get_color())


def _step_xy(t_end: np.ndarray, y: np.ndarray, window: float):
    """x, y for ``ax.step(where="pre")`` of windows ending at ``t_end``: each
    value is held over its window (the first one starts ``window`` earlier)."""
    return np.concatenate([[t_end[0] - window], t_end]), np.concatenate([[y[0]], y])


def _window(ts: np.ndarray, stated) -> float:
    if stated:
        return float(stated)
    u = np.unique(ts)
    return float(np.min(np.diff(u))) if len(u) > 1 else float(u[0]) if len(u) else 1.0


class _Figures:
    """Where figures go: saves each one's PNG and CSV into ``out`` and keeps
    the list of files written, in order."""

    def __init__(self, out: Path, grouped: bool, baseline: Optional[str] = None):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.out = out
        self.grouped = grouped
        self.baseline = baseline
        self.written: list[Path] = []

    def save_csv(self, name: str, table: pd.DataFrame) -> None:
        table.to_csv(self.out / f"{name}.csv", index=False)
        self.written.append(self.out / f"{name}.csv")

    def save(self, fig, name: str, table: pd.DataFrame, rect=None) -> None:
        fig.tight_layout(rect=rect)
        fig.savefig(self.out / f"{name}.png", dpi=120)
        self.plt.close(fig)
        self.written.append(self.out / f"{name}.png")
        self.save_csv(name, table)


def _legend_below(fig, handles, labels, ncol=2) -> tuple:
    """A legend under the axes; returns the ``tight_layout`` rect that
    leaves room for it."""
    rows = math.ceil(len(labels) / ncol)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    return (0, min((0.2 * rows + 0.12) / fig.get_figheight(), 0.5), 1, 1)


def _plain_log_ticks(axis) -> None:
    """Log-axis tick labels as plain numbers (0.1, 1, 10; 2, 3 between)."""
    import matplotlib.ticker as ticker

    class Plain(ticker.LogFormatter):  # labels the minor ticks LogFormatter would, as 0.6 rather than 6e-01
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def plot_runs(runs: list[Path], out: Path, group: Optional[str] = None, groups: Optional[dict] = None,
              baseline: Optional[str] = None) -> list[Path]:
    """Draws the figures for the run folders ``runs`` into ``out``; returns
    the files written (PNG and CSV). ``group="scheme"`` pools the runs of
    each scheme (e.g. several seeds) into one series; ``groups`` (run folder
    -> name) pools them by a name of the caller's (``lbsim compare``'s
    arms). ``baseline`` (a group's name; its runs' seeds must differ) adds
    the paired panels: each other group against it, seed by seed, as
    ``lbsim.compare.paired_rows`` judges it."""
    if group not in (None, "scheme"):
        raise ValueError(f"group must be None or 'scheme', not {group!r}")
    rs = load_runs([Path(r) for r in runs])
    if groups is not None:
        groups = {Path(k): v for k, v in groups.items()}
        group = group or "arm"
    series = make_series(rs, group, groups)
    if baseline is not None:
        _check_pairs(series, baseline)
    out.mkdir(parents=True, exist_ok=True)
    figs = _Figures(out, grouped=group is not None, baseline=baseline)
    fct_cdf(figs, rs, series)
    buckets, per_run = size_buckets(rs)
    fct_by_size(figs, series, buckets, per_run)
    slowdown_by_size(figs, series, buckets, per_run)
    link_utilisation(figs, series)
    flow_goodput(figs, rs)
    jobs = job_table(series)
    if len(jobs):
        job_iteration_time(figs, series, jobs)
        job_busbw(figs, series, jobs)
    failures_table(figs, rs)
    return figs.written


def _check_pairs(series: list[Series], baseline: str) -> None:
    keys = [s.runs[0].group for s in series]
    if baseline not in keys:
        raise ValueError(f"baseline {baseline!r} is not one of the groups ({', '.join(keys)})")
    for s in series:
        seeds = [str(r.seed) for r in s.runs]
        if len(set(seeds)) < len(seeds):
            raise ValueError(f"baseline: group {s.runs[0].group} has two runs of one seed; runs pair by seed")


def fct_cdf(figs: _Figures, rs: list[Run], series: list[Series]) -> None:
    """``fct_cdf.png``: y is the fraction of all the run's flows done within
    x, so a run that left flows unfinished levels off below 1 instead of
    looking fast; a group draws its median with a band."""
    plt, grouped = figs.plt, figs.grouped
    completed = {id(r): np.sort(r.flows[r.flows.completed].fct_us.to_numpy(dtype=float)) / 1e3 for r in rs}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    rows, grows = [], []
    cdf_q = (0.5, 0.9, 0.99)

    def all_flows(r: Run) -> np.ndarray:  # sorted FCTs (ms), unfinished flows as inf
        return np.concatenate([completed[id(r)], np.full(int((~r.flows.completed).sum()), np.inf)])

    longest = max((float(v[-1]) for v in completed.values() if len(v)), default=1.0)
    for s in series:
        for r in s.runs:
            v, a = completed[id(r)], all_flows(r)
            rows += [{**r.ids(), "quantile": q, "fct_ms": nearest_rank(v, q, presorted=True), "fct_ms_all_flows": nearest_rank(a, q, presorted=True),
                      "completed": len(v), "flows": len(r.flows)} for q in cdf_q]
        unfinished = sum(int((~r.flows.completed).sum()) for r in s.runs)
        total = sum(len(r.flows) for r in s.runs)
        note = f", {unfinished} of {total} flows unfinished" if unfinished else ""
        if len(s.runs) == 1:
            r = s.runs[0]
            v = completed[id(r)]
            if grouped:
                grows += [{**_group_ids(s), "quantile": q, "fct_ms_median": nearest_rank(all_flows(r), q, presorted=True),
                           "fct_ms_lo": nearest_rank(all_flows(r), q, presorted=True), "fct_ms_hi": nearest_rank(all_flows(r), q, presorted=True),
                           "band": "one run"} for q in cdf_q]
            if len(v):
                y = np.arange(0, len(v) + 1) / len(r.flows)
                ax.step(np.concatenate([[v[0]], v]), y, where="post", color=s.color, ls=s.linestyle, lw=1.3,
                        label=s.label + note)
            continue
        vs = [all_flows(r) for r in s.runs if len(r.flows)]
        if not any(np.isfinite(v).any() for v in vs):
            continue
        p = np.linspace(0, 1, 401)[1:]
        qs = np.array([[nearest_rank(v, x, presorted=True) for x in p] for v in vs])
        cols = lambda q: np.array([nearest_rank(c, q) for c in qs.T])  # noqa: E731
        med = cols(0.5)
        band = "min-max" if len(vs) < 10 else "10-90 %"
        lo, hi = (qs.min(axis=0), qs.max(axis=0)) if len(vs) < 10 else (cols(0.1), cols(0.9))
        med, lo, hi = (np.where(np.isfinite(x), x, np.nan) for x in (med, lo, hi))
        ax.plot(med, p, color=s.color, ls=s.linestyle, lw=1.3, label=f"{s.label}: median, band {band}{note}")
        # the band where some run got; where another never did, it reaches the longest FCT drawn
        ok = np.isfinite(lo)
        ax.fill_betweenx(p[ok], lo[ok], np.where(np.isfinite(hi), hi, longest)[ok], color=s.color, alpha=0.2, lw=0)
        for q in cdf_q:
            i = int(np.argmin(np.abs(p - q)))
            grows.append({**_group_ids(s), "quantile": q, "fct_ms_median": med[i], "fct_ms_lo": lo[i], "fct_ms_hi": hi[i],
                          "band": band})
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("flow completion time (ms)")
    ax.set_ylabel("fraction of flows completed")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3, which="both", lw=0.5)
    ax.legend(fontsize=7, loc="lower right")
    figs.save(fig, "fct_cdf", pd.DataFrame(rows))
    if grouped:
        figs.save_csv("fct_cdf_groups", pd.DataFrame(grows))


def size_buckets(rs: list[Run]) -> tuple[list, pd.DataFrame]:
    """The size buckets (summary.json's, else the default ones) and one row
    per run and bucket: flows, completed, mean and p99 FCT and slowdown."""
    buckets = next((b for b in (r.buckets() for r in rs) if b), None) or DEFAULT_BUCKETS
    per_run = []
    for r in rs:
        f = r.flows
        for lo_b, hi_b, name in buckets:
            g = f[(f.size_bytes >= lo_b) & (f.size_bytes < hi_b)]
            d = g[g.completed]
            fct = np.sort(d.fct_us.to_numpy(dtype=float)) / 1e3
            sd = np.sort(d.slowdown.to_numpy(dtype=float))
            sd = sd[np.isfinite(sd)]
            per_run.append({**r.ids(), "bucket": name, "min_bytes": lo_b, "max_bytes": None if math.isinf(hi_b) else hi_b,
                            "flows": len(g), "completed": len(d),
                            "fct_mean_ms": float(fct.mean()) if len(fct) else math.nan, "fct_p99_ms": nearest_rank(fct, 0.99, presorted=True),
                            "slowdown_mean": float(sd.mean()) if len(sd) else math.nan, "slowdown_p99": nearest_rank(sd, 0.99, presorted=True)})
    return buckets, pd.DataFrame(per_run)


def fct_by_size(figs: _Figures, series: list[Series], buckets: list, per_run: pd.DataFrame) -> None:
    """``fct_by_size.png``: mean and p99 FCT per size bucket, bars per series."""
    _bars_by_size(figs, series, buckets, per_run, "fct_by_size", [("fct_mean_ms", "mean FCT (ms)"), ("fct_p99_ms", "p99 FCT (ms)")])


def slowdown_by_size(figs: _Figures, series: list[Series], buckets: list, per_run: pd.DataFrame) -> None:
    """``slowdown_by_size.png``: mean and p99 slowdown per size bucket."""
    _bars_by_size(figs, series, buckets, per_run, "slowdown_by_size",
                  [("slowdown_mean", "mean slowdown (FCT / ideal)"), ("slowdown_p99", "p99 slowdown (FCT / ideal)")])


def _bars_by_size(figs: _Figures, series: list[Series], buckets: list, per_run: pd.DataFrame, fig_name: str, stats: list) -> None:
    """One column of panels per statistic in ``stats``: bars per size
    bucket and series (``_bar_panel``) and, with a baseline, each series
    against it (``_paired_panel``)."""
    cats = [b for _, _, b in buckets]
    fig, axes = _grid(figs, len(stats), 9.6, 4.0)
    grows = []
    for j, (col, title) in enumerate(stats):
        grows += _bar_panel(figs, axes[0][j], per_run, series, "bucket", cats, col, log=True)
        axes[0][j].set_ylabel(title)
        if figs.baseline is not None:
            grows += _paired_panel(figs, axes[1][j], per_run, series, "bucket", cats, col)
            axes[1][j].set_ylabel(f"{title.split(' (')[0]}: arm / {figs.baseline}")
    labels = [f"{b}\n({_per_run_count(per_run[per_run.bucket == b].flows)})" for b in cats]
    for ax in axes.flat:
        ax.set_xticks(np.arange(len(cats)), labels, fontsize=8)
    rect = _legend_below(fig, *_series_legend(series), ncol=3)
    cols = ["run", "scheme", "seed", "group", "bucket", "min_bytes", "max_bytes", "flows", "completed"] + [c for c, _ in stats]
    figs.save(fig, fig_name, per_run[cols], rect=rect)
    if figs.grouped:
        figs.save_csv(f"{fig_name}_groups", pd.DataFrame(grows))


def _grid(figs: _Figures, ncol: int, width: float, height: float):
    """A row of ``ncol`` panels, and a second row for the paired panels
    when there is a baseline."""
    nrow = 2 if figs.baseline is not None else 1
    return figs.plt.subplots(nrow, ncol, figsize=(width, height * nrow), squeeze=False)


def _series_legend(series: list[Series]) -> tuple[list, list]:
    from matplotlib.patches import Patch

    return [Patch(facecolor=s.color, hatch=None if s.linestyle == "-" else "//") for s in series], [s.label for s in series]


def _per_run_count(flows: pd.Series) -> str:
    """The flows of a size bucket under its bars: per run, not summed over
    runs ("700 flows per run"; "690-710 flows per run" where runs differ)."""
    lo, hi = int(flows.min()), int(flows.max())
    many = len(flows) > 1
    return f"{lo}{f'-{hi}' if hi != lo else ''} flows{' per run' if many else ''}"


def _bar_panel(figs: _Figures, ax, per_run: pd.DataFrame, series: list[Series], cat_col: str, cats: list, col: str,
               log: bool) -> list[dict]:
    """Bars per category and series: a series' bar is the mean over its
    runs of their values (``per_run``: one row per run and category), with
    the 95 % t interval over those runs (``lbsim.stats.mean_interval``, as
    compare's own values) and a dot per run; a single run's bar is its
    value. Returns the group statistics (``basis`` "value")."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(cats))
    rows, shown = [], []
    for i, s in enumerate(series):
        sub = per_run[per_run.group == s.runs[0].group]
        xs = x + (i - (len(series) - 1) / 2) * width
        est, lo, hi = np.full(len(cats), np.nan), np.full(len(cats), np.nan), np.full(len(cats), np.nan)
        for k, c in enumerate(cats):
            v = sub.loc[sub[cat_col] == c, col].astype(float).to_numpy()
            m = mean_interval(list(v))
            est[k], lo[k], hi[k] = m.ratio, m.ci_low, m.ci_high
            rows.append({**_group_ids(s), cat_col: c, "stat": col, "basis": "value", "baseline": None, "n": m.seeds,
                         "estimate": m.ratio, "ci_low": m.ci_low, "ci_high": m.ci_high, "method": m.method})
            if len(s.runs) > 1:
                ax.plot(np.full(len(v), xs[k]), v, ".", color="black", ms=3, zorder=4)
                shown += list(v)
        has = np.isfinite(lo) & np.isfinite(hi)
        # on a log axis, an interval reaching 0 or below runs off the bottom edge
        lower = np.where(has, np.minimum(est - lo, est * 0.999) if log else est - lo, 0)
        ax.bar(xs, est, width * 0.95, color=s.color, hatch=None if s.linestyle == "-" else "//", edgecolor="white", lw=0.3,
               yerr=[lower, np.where(has, hi - est, 0)] if has.any() else None,
               error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "black"})
        shown += list(est) + list(lo[has])
    if log:
        ax.set_yscale("log")
        pos = [y for y in shown if np.isfinite(y) and y > 0]
        if pos:
            ax.set_ylim(bottom=min(pos) / 1.5)
        _plain_log_ticks(ax.yaxis)
    ax.grid(axis="y", alpha=0.3, which="both", lw=0.5)
    if figs.grouped:
        over = _over(series)
        ax.set_title(f"mean over {over}, 95 % t interval over {over}; dots: each {over[:-1]}", fontsize=8)
    return rows


def _paired_panel(figs: _Figures, ax, per_run: pd.DataFrame, series: list[Series], cat_col: str, cats: list, col: str) -> list[dict]:
    """Each series but the baseline against it, per category: its value /
    the baseline's in each seed (dots) and the estimate and 95 % interval
    of ``lbsim.compare.paired_rows``, the one compare.json reports (a ratio;
    where that takes the difference instead, because the baseline is 0 in
    a seed, the panel names it and the CSV holds it). Returns those rows
    (``basis`` "ratio" or "difference")."""
    from lbsim.compare import paired_rows

    base = figs.baseline
    others = [s for s in series if s.runs[0].group != base]
    width = 0.8 / max(len(others), 1)
    x = np.arange(len(cats))
    rows = []
    for i, s in enumerate(others):
        g = s.runs[0].group
        xs = x + (i - (len(others) - 1) / 2) * width
        for k, c in enumerate(cats):
            t = per_run[(per_run[cat_col] == c) & per_run.group.isin([base, g])]
            (r,) = paired_rows(pd.DataFrame({"arm": t.group, "seed": t.seed, col: t[col].astype(float)}), [base, g], base, [col])
            if r["basis"] == "ratio":
                est, lo, hi = r["ratio"], r["ci_low"], r["ci_high"]
            else:
                est, lo, hi = r["difference"], r["difference_ci_low"], r["difference_ci_high"]
            rows.append({**_group_ids(s), cat_col: c, "stat": col, "basis": r["basis"], "baseline": base, "n": r["seeds"],
                         "estimate": est, "ci_low": lo, "ci_high": hi, "method": r["method"]})
            per_seed = t.pivot(index="seed", columns="group", values=col).astype(float)
            if base in per_seed and g in per_seed:
                ratio = (per_seed[g] / per_seed[base]).to_numpy()
                ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
                ax.plot(np.full(len(ratio), xs[k]), ratio, ".", color="black", ms=3, zorder=4)
            if r["basis"] == "difference":
                ax.annotate("judged as a\ndifference\n(see CSV)", (xs[k], 1.0), ha="center", va="bottom", fontsize=6)
            elif np.isfinite(est) and est > 0:
                has = np.isfinite(lo) and np.isfinite(hi)
                err = [[est - max(lo, est * 1e-3)], [hi - est]] if has else None
                ax.errorbar(xs[k], est, yerr=err, fmt="o", ms=5, color=s.color, ecolor="black", elinewidth=1, capsize=3, zorder=5)
    ax.axhline(1.0, color="black", ls="--", lw=1)
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.grid(axis="y", alpha=0.3, which="both", lw=0.5)
    ax.set_title(f"paired: arm / {base} per seed (dots), estimate and 95 % interval", fontsize=8)
    return rows


def link_utilisation(figs: _Figures, series: list[Series]) -> None:
    """``link_utilisation.png``: one panel per series with links.parquet (a
    scheme's seeds share one), shared axes; per run the mean utilisation
    over its sampled ports, a step line coloured by seed, with the min-max
    over the ports as a band. Panels of one run each with at most
    ``MAX_PORT_LINES`` ports draw every port instead."""
    import matplotlib
    from matplotlib.patches import Patch

    panels = [(s, [r for r in s.runs if (r.path / "links.parquet").exists()]) for s in series]
    panels = [(s, rs) for s, rs in panels if rs]
    if not panels:
        return
    tables = {id(r): pd.read_parquet(r.path / "links.parquet").sort_values(["port", "t_ms"]) for _, rs in panels for r in rs}
    ports = sorted({p for t in tables.values() for p in t.port.unique()})
    per_port = len(ports) <= MAX_PORT_LINES and all(len(rs) == 1 for _, rs in panels)
    cmap = matplotlib.colormaps["tab10"].colors
    keys = ports if per_port else list(dict.fromkeys(str(r.seed) for _, rs in panels for r in rs))
    colour = {p: cmap[i % len(cmap)] for i, p in enumerate(keys)}
    ncol = min(len(panels), 3)
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = figs.plt.subplots(nrow, ncol, figsize=(3.6 * ncol + 0.6, 2.6 * nrow + 0.9), sharex=True, sharey=True,
                                  squeeze=False)
    handles: dict = {}
    rows, bands = [], []
    for k, (s, rs) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        windows = []
        for r in rs:
            t = tables[id(r)]
            w = _window(t.t_ms.to_numpy(), r.scenario.get("metrics", {}).get("utilization_window_ms"))
            windows.append(w)
            rows.append(t.assign(**r.ids()))
            if per_port:
                for port, g in t.groupby("port"):
                    xs, ys = _step_xy(g.t_ms.to_numpy(), g.utilisation.to_numpy(), w)
                    line, = ax.step(xs, ys, where="pre", lw=1.2, color=colour[port])
                    handles.setdefault(port, line)
                continue
            u = t.groupby("t_ms").utilisation.agg(["mean", "min", "max", "count"])
            tt = u.index.to_numpy()
            xs, ys = _step_xy(tt, u["mean"].to_numpy(), w)
            ax.fill_between(xs, _step_xy(tt, u["min"].to_numpy(), w)[1], _step_xy(tt, u["max"].to_numpy(), w)[1], step="pre",
                            color=colour[str(r.seed)], alpha=0.2, lw=0)
            line, = ax.step(xs, ys, where="pre", lw=1.3, color=colour[str(r.seed)])
            handles.setdefault(f"seed {r.seed}: mean over the ports", line)
            bands.append(pd.DataFrame({**r.ids(), "t_ms": tt, "window_ms": w, "ports": u["count"].to_numpy(),
                                       "utilisation_mean": u["mean"].to_numpy(), "utilisation_min": u["min"].to_numpy(),
                                       "utilisation_max": u["max"].to_numpy()}))
        if not per_port:
            handles.setdefault("band: min-max over the ports", Patch(facecolor="0.5", alpha=0.3))
        _mark_failures(ax, [e for r in rs for e in r.failures], handles)
        name = s.runs[0].group if figs.grouped else rs[0].label
        n_ports = max(tables[id(r)].port.nunique() for r in rs)
        runs = f"{len(rs)} {_over([Series('', rs, '')])}, " if figs.grouped and len(rs) > 1 else ""
        ax.set_title(f"{name} ({runs}{n_ports} ports, {'/'.join(f'{w:g}' for w in dict.fromkeys(windows))} ms windows)",
                     fontsize=8)
        ax.grid(alpha=0.3, lw=0.5)
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    for a in axes[-1]:
        a.set_xlabel("time (ms)")
    for a in axes[:, 0]:
        a.set_ylabel("utilisation")
    axes[0][0].set_ylim(bottom=0)
    rect = _legend_below(fig, list(handles.values()), list(handles.keys()), ncol=min(len(handles), 4))
    table = pd.concat(rows, ignore_index=True)
    figs.save(fig, "link_utilisation", table[["run", "scheme", "seed", "group", "t_ms", "port", "bytes", "gbps", "utilisation"]],
              rect=rect)
    if bands:
        figs.save_csv("link_utilisation_bands", pd.concat(bands, ignore_index=True))


def flow_goodput(figs: _Figures, rs: list[Run]) -> None:
    """``flow_goodput.png``: per run with flow_rates.parquet, the aggregate
    goodput of all flows (left) and of the largest flows (right)."""
    import matplotlib

    with_rates = [r for r in rs if (r.path / "flow_rates.parquet").exists()]
    if not with_rates:
        return
    n = len(with_rates)
    fig, axes = figs.plt.subplots(n, 2, figsize=(10, 2.4 * n + 0.8), sharex=True, sharey="col", squeeze=False)
    handles: dict = {}
    rows = []
    for k, r in enumerate(with_rates):
        fr = pd.read_parquet(r.path / "flow_rates.parquet")
        w = _window(fr.t_ms.to_numpy(), r.scenario.get("metrics", {}).get("flow_rate_window_ms"))
        fr = fr.assign(k=np.rint(fr.t_ms / w).astype(int))
        kmax = int(fr.k.max()) if len(fr) else 1
        grid = np.arange(1, kmax + 1)
        agg = fr.groupby("k").gbps.sum().reindex(grid, fill_value=0.0)
        xs, ys = _step_xy(grid * w, agg.to_numpy(), w)
        ax = axes[k][0]
        ax.step(xs, ys, where="pre", color="black", lw=1.2)
        ax.set_title(f"{r.label}: all {fr.flow_id.nunique()} flows", fontsize=8)
        rows.append(pd.DataFrame({**r.ids(), "series": "all flows", "flow_id": -1, "size_bytes": int(r.flows.size_bytes.sum()),
                                  "t_ms": grid * w, "gbps": agg.to_numpy()}))
        ax2 = axes[k][1]
        f = r.flows[r.flows.flow_id.isin(fr.flow_id.unique())]
        top = f.sort_values(["size_bytes", "flow_id"], ascending=[False, True]).head(TOP_FLOWS)
        for j, fl in enumerate(top.itertuples()):
            g = fr[fr.flow_id == fl.flow_id].groupby("k").gbps.sum()
            k0 = max(int(math.floor(fl.start_us / 1e3 / w)) + 1, 1)
            k1 = int(math.ceil(fl.finish_us / 1e3 / w)) if fl.completed and np.isfinite(fl.finish_us) else kmax
            k1 = max(k1, int(g.index.max()))
            kk = np.arange(min(k0, int(g.index.min())), k1 + 1)
            g = g.reindex(kk, fill_value=0.0)
            lab = f"flow {fl.flow_id}, {_human_bytes(fl.size_bytes)}" + ("" if fl.completed else " (unfinished)")
            xs, ys = _step_xy(kk * w, g.to_numpy(), w)
            ax2.step(xs, ys, where="pre", lw=1.1, color=matplotlib.colormaps["tab10"].colors[j], label=lab)
            rows.append(pd.DataFrame({**r.ids(), "series": f"flow {fl.flow_id}", "flow_id": fl.flow_id,
                                      "size_bytes": fl.size_bytes, "t_ms": kk * w, "gbps": g.to_numpy()}))
        ax2.set_title(f"{r.label}: the {len(top)} largest flows", fontsize=8)
        ax2.legend(fontsize=6, loc="upper right", title_fontsize=6)
        for a in (ax, ax2):
            _mark_failures(a, r.failures, handles)
            a.grid(alpha=0.3, lw=0.5)
            a.set_ylabel("goodput (Gb/s)", fontsize=8)
    for a in axes[-1]:
        a.set_xlabel("time (ms)")
    axes[0][0].set_ylim(bottom=0)
    axes[0][1].set_ylim(bottom=0)
    rect = None
    if handles:
        rect = _legend_below(fig, list(handles.values()), list(handles.keys()), ncol=2)
    figs.save(fig, "flow_goodput", pd.concat(rows, ignore_index=True), rect=rect)


def job_table(series: list[Series]) -> pd.DataFrame:
    """One row per run and collective job (jobs.parquet): the mean over its
    completed iterations of the iteration time and busbw (summary.json's
    ``jobs[].iteration_us.mean`` and ``jobs[].busbw_gbps.mean``) and the
    ideals."""
    rows = []
    for s in series:
        for r in s.runs:
            if not (r.path / "jobs.parquet").exists():
                continue
            for _, g in pd.read_parquet(r.path / "jobs.parquet").groupby("job", sort=True):
                d = g[g.completed]
                rows.append({**r.ids(), "job": str(g["name"].iloc[0]), "size_bytes": int(g.size_bytes.iloc[0]), "iterations": len(d),
                             "iteration_ms": float(d.time_us.mean()) / 1e3 if len(d) else math.nan,
                             "ideal_ms": float(g.ideal_us.iloc[0]) / 1e3, "busbw_gbps": float(d.busbw_gbps.mean()) if len(d) else math.nan,
                             "ideal_busbw_gbps": float(g.ideal_busbw_gbps.iloc[0])})
    return pd.DataFrame(rows)


def job_iteration_time(figs: _Figures, series: list[Series], jobs: pd.DataFrame) -> None:
    """``job_iteration_time.png``: per job, bars per series of the mean
    iteration time per run (``_bar_panel``: over a series' runs, never over
    iterations), the ideal dashed; with a baseline, each series against it
    (``_paired_panel``)."""
    _job_bars(figs, series, jobs, "job_iteration_time", "iteration_ms", "ideal_ms", "iteration time (ms)")


def job_busbw(figs: _Figures, series: list[Series], jobs: pd.DataFrame) -> None:
    """``job_busbw.png``: per job, bars per series of the mean busbw per
    run, the ideal dashed and 90 % of it dotted; with a baseline, each
    series against it."""
    _job_bars(figs, series, jobs, "job_busbw", "busbw_gbps", "ideal_busbw_gbps", "bus bandwidth (Gb/s)", near=0.9)


def _job_bars(figs: _Figures, series: list[Series], jobs: pd.DataFrame, name: str, col: str, ideal: str, title: str,
              near: Optional[float] = None) -> None:
    cats = list(dict.fromkeys(jobs.job))
    fig, axes = _grid(figs, 1, 6.4, 4.2)
    ax = axes[0][0]
    grows = _bar_panel(figs, ax, jobs, series, "job", cats, col, log=False)
    handles, labels = _series_legend(series)
    for k, c in enumerate(cats):
        v = float(jobs.loc[jobs.job == c, ideal].min())
        line = ax.hlines(v, k - 0.45, k + 0.45, color="black", ls="--", lw=1, zorder=5)
        if near is not None:
            dotted = ax.hlines(near * v, k - 0.45, k + 0.45, color="gray", ls=":", lw=1, zorder=5)
    handles.append(line)
    labels.append("ideal (idle non-blocking fabric)")
    if near is not None:
        handles.append(dotted)
        labels.append(f"{near:.0%} of ideal")
    ax.set_ylabel(title)
    ax.set_ylim(bottom=0)
    if figs.baseline is not None:
        grows += _paired_panel(figs, axes[1][0], jobs, series, "job", cats, col)
        axes[1][0].set_ylabel(f"{title.split(' (')[0]}: arm / {figs.baseline}")
    sizes = jobs.groupby("job", sort=False).size_bytes.first()
    for a in axes.flat:
        a.set_xticks(np.arange(len(cats)), [f"{c} ({_human_bytes(sizes[c])})" for c in cats], fontsize=8)
    rect = _legend_below(fig, handles, labels, ncol=3)
    figs.save(fig, name, jobs[["run", "scheme", "seed", "group", "job", "size_bytes", "iterations", col, ideal]], rect=rect)
    if figs.grouped:
        figs.save_csv(f"{name}_groups", pd.DataFrame(grows))


def failures_table(figs: _Figures, rs: list[Run]) -> None:
    """``failures.csv``: every run's link failures and restores (one
    ``none`` row for a run without)."""
    rows = []
    for r in rs:
        evs = r.failures or [{"link": "", "event": "none", "t_ms": math.nan, "source": ""}]
        rows += [{**r.ids(), **e} for e in evs]
    figs.save_csv("failures", pd.DataFrame(rows, columns=["run", "scheme", "seed", "group", "link", "event", "t_ms", "source"]))
