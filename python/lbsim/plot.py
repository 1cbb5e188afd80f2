"""``lbsim plot``: the figures a researcher draws first, for one run or to
compare several (folders written by ``lbsim run --out`` or sweep runs).

A *series* is one run, labelled "folder (scheme)"; with ``group="scheme"``
(``lbsim plot --group scheme``) the runs that share ``scheme.name`` in
summary.json (e.g. seeds of one scheme) form one series instead. Series keep
one colour across figures.

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
  as in summary.json. A group's bar is the mean over its runs with a 95 %
  Student-t interval over runs as error bar (none for a single run).
- ``link_utilisation.png``: small multiples, one panel per run that has
  links.parquet (``metrics.link_samplers``), shared axes; one step line per
  sampled port (each port in grey plus the mean when there are more than 10).
- ``flow_goodput.png``: one row per run that has flow_rates.parquet
  (``metrics.flow_rate_window_ms``): the aggregate receive-side goodput of all
  flows (left) and the goodput of the 5 largest flows, labelled by id and
  size (right); windows without delivered bytes count as 0 (stalls show).
- ``job_iteration_time.png`` and ``job_busbw.png``, for runs with
  collective jobs (jobs.parquet): the iteration time per series (mean, 95 %
  Student-t interval and every completed iteration, the ideal dashed), and
  the bus bandwidth against message size (per run its mean over iterations;
  per series and size the mean and 95 % interval over runs; the ideal
  dashed; with one message size, the series side by side against the
  ideal and 90 % of it, each labelled busbw / ideal).
- Link failures and restores (``[[failures]]`` ``at_ms`` / ``restore_ms`` and
  ``[[random_failures]]`` from the run folder's resolved scenario.toml) are
  dashed red (down) and dotted green (restored) vertical lines on every time
  axis, in the panel of the run they belong to, and listed in
  ``failures.csv`` (one ``none`` row for a run without failures).

Each figure's numbers are written as CSV beside it, with rows for every run
and ``run`` (folder name; the path below the common parent when two folders
share a name), ``scheme``, ``seed`` and ``group`` columns; with groups,
``*_groups.csv`` hold the group statistics (``run`` and ``seed`` then list
the group's runs, ";"-separated).
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


def mean_ci95(values) -> tuple[float, float, int]:
    """(mean, half width of the 95 % t interval, n) over the finite values;
    the half width is NaN below two values."""
    r = mean_interval([float(x) for x in values if x is not None])
    return r.ratio, r.ci_high - r.ratio, r.seeds


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

    @property
    def scheme(self) -> str:
        return self.summary.get("scheme", {}).get("name", "") or ""

    @property
    def seed(self):
        return self.summary.get("seed", self.scenario.get("seed", ""))

    @property
    def label(self) -> str:
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
        else:
            r.group = (r.scheme or r.name) if group == "scheme" else r.name
        keyed.setdefault(r.group, []).append(r)
    out = []
    for i, (key, rs) in enumerate(keyed.items()):
        if group and len(rs) > 1:
            label = f"{key} ({len(rs)} runs)"
            seeds = [r.seed for r in rs]
            if len(set(map(str, seeds))) < len(seeds):
                print(f"lbsim plot: note: group {key}: runs {', '.join(r.name for r in rs)} share a seed; "
                      "they differ in more than the seed", file=sys.stderr)
        else:
            label = rs[0].label if not group else f"{key} (1 run)"
        out.append(Series(label, rs, cycle[i % len(cycle)], styles[(i // len(cycle)) % len(styles)]))
    return out


def _group_ids(s: Series) -> dict:
    return {"run": ";".join(r.name for r in s.runs), "scheme": ";".join(sorted({r.scheme for r in s.runs})),
            "seed": ";".join(str(r.seed) for r in s.runs), "group": s.runs[0].group, "n_runs": len(s.runs)}


def _mark_failures(ax, run: Run, handles: dict) -> None:
    """Vertical lines at the run's failure (red, dashed) and restore (green,
    dotted) times, one per time and kind, named at the top of the axes."""
    import matplotlib.transforms as mtransforms

    at: dict[tuple, list] = {}
    for e in run.failures:
        if np.isfinite(e["t_ms"]):
            at.setdefault((e["t_ms"], e["event"]), []).append(e["link"])
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for (t, event), links in sorted(at.items()):
        down = event == "down"
        line = ax.axvline(t, color="tab:red" if down else "tab:green", ls="--" if down else ":", lw=1.2, zorder=5)
        handles.setdefault("link down" if down else "link restored", line)
        text = links[0] if len(links) == 1 else f"{len(links)} links"
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

    def __init__(self, out: Path, grouped: bool):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.out = out
        self.grouped = grouped
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

    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def plot_runs(runs: list[Path], out: Path, group: Optional[str] = None, groups: Optional[dict] = None) -> list[Path]:
    """Draws the figures for the run folders ``runs`` into ``out``; returns
    the files written (PNG and CSV). ``group="scheme"`` pools the runs of
    each scheme (e.g. several seeds) into one series; ``groups`` (run folder
    -> name) pools them by a name of the caller's (``lbsim compare``'s
    arms)."""
    if group not in (None, "scheme"):
        raise ValueError(f"group must be None or 'scheme', not {group!r}")
    rs = load_runs([Path(r) for r in runs])
    if groups is not None:
        groups = {Path(k): v for k, v in groups.items()}
        group = group or "arm"
    series = make_series(rs, group, groups)
    out.mkdir(parents=True, exist_ok=True)
    figs = _Figures(out, grouped=group is not None)
    fct_cdf(figs, rs, series)
    buckets, per_run = size_buckets(rs)
    fct_by_size(figs, series, buckets, per_run)
    slowdown_by_size(figs, series, buckets, per_run)
    link_utilisation(figs, rs)
    flow_goodput(figs, rs)
    jobs = [(s, r, pd.read_parquet(r.path / "jobs.parquet")) for s in series for r in s.runs if (r.path / "jobs.parquet").exists()]
    if jobs:
        done = pd.concat([j.assign(**r.ids(), series=s.label) for s, r, j in jobs], ignore_index=True)
        done = done[done.completed]
        job_iteration_time(figs, done)
        job_busbw(figs, done)
    failures_table(figs, rs)
    return figs.written


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
    """Two panels (one per statistic in ``stats``) of bars per size bucket
    and series; a group's bar is the mean over its runs with a 95 % t
    interval."""
    plt, grouped = figs.plt, figs.grouped
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.0))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(buckets))
    grows = []
    handles = []
    lows: dict[str, list] = {col: [] for col, _ in stats}
    for i, s in enumerate(series):
        names = {r.name for r in s.runs}
        sub = per_run[per_run.run.isin(names)]
        for ax, (col, _title) in zip(axes, stats):
            ys, errs = [], []
            for _, _, b in buckets:
                m, h, n = mean_ci95(sub[sub.bucket == b][col].tolist())
                ys.append(m)
                errs.append(h)
                if grouped:
                    grows.append({**_group_ids(s), "bucket": b, "stat": col, "runs_with_data": n, "mean": m,
                                  "ci95_half": h, "ci95_lo": m - h, "ci95_hi": m + h})
            ys, errs = np.array(ys), np.array(errs)
            # on the log axis, an interval reaching 0 or below runs off the bottom
            # edge, which the bars and the positive interval ends set
            lows[col] += [y for y in np.concatenate([ys, ys - errs]) if np.isfinite(y) and y > 0]
            lower = np.where(np.isfinite(errs), np.minimum(errs, ys * 0.999), 0)
            upper = np.where(np.isfinite(errs), errs, 0)
            bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, ys, width * 0.95, color=s.color,
                          hatch=None if s.linestyle == "-" else "//", edgecolor="white", lw=0.3,
                          yerr=[lower, upper] if np.isfinite(errs).any() else None,
                          error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "black"})
        handles.append(bars)
    counts = per_run.groupby("bucket", sort=False).flows.sum()
    for ax, (col, title) in zip(axes, stats):
        ax.set_yscale("log")
        if lows[col]:
            ax.set_ylim(bottom=min(lows[col]) / 1.5)
        _plain_log_ticks(ax.yaxis)
        ax.set_xticks(x, [f"{b}\n({int(counts.get(b, 0))} flows)" for _, _, b in buckets], fontsize=8)
        ax.set_ylabel(title)
        ax.grid(axis="y", alpha=0.3, which="both", lw=0.5)
        if grouped:
            ax.set_title("mean over runs, 95 % t interval", fontsize=8)
    rect = _legend_below(fig, handles, [s.label for s in series], ncol=3)
    cols = ["run", "scheme", "seed", "group", "bucket", "min_bytes", "max_bytes", "flows", "completed"] + [c for c, _ in stats]
    figs.save(fig, fig_name, per_run[cols], rect=rect)
    if grouped:
        figs.save_csv(f"{fig_name}_groups", pd.DataFrame(grows))


def link_utilisation(figs: _Figures, rs: list[Run]) -> None:
    """``link_utilisation.png``: one panel per run with links.parquet, one
    step line per sampled port (grey plus the mean for many ports)."""
    import matplotlib

    with_links = [r for r in rs if (r.path / "links.parquet").exists()]
    if not with_links:
        return
    tables = {id(r): pd.read_parquet(r.path / "links.parquet") for r in with_links}
    ports = sorted({p for t in tables.values() for p in t.port.unique()})
    many = len(ports) > MAX_PORT_LINES
    cmap = matplotlib.colormaps["tab10"].colors
    colour = {p: cmap[i % len(cmap)] for i, p in enumerate(ports)}
    ncol = min(len(with_links), 3)
    nrow = math.ceil(len(with_links) / ncol)
    fig, axes = figs.plt.subplots(nrow, ncol, figsize=(3.6 * ncol + 0.6, 2.6 * nrow + 0.9), sharex=True, sharey=True,
                                  squeeze=False)
    handles: dict = {}
    rows = []
    for k, r in enumerate(with_links):
        ax = axes[k // ncol][k % ncol]
        t = tables[id(r)].sort_values(["port", "t_ms"])
        w = _window(t.t_ms.to_numpy(), r.scenario.get("metrics", {}).get("utilization_window_ms"))
        for port, g in t.groupby("port"):
            xs, ys = _step_xy(g.t_ms.to_numpy(), g.utilisation.to_numpy(), w)
            line, = ax.step(xs, ys, where="pre", lw=0.6 if many else 1.2,
                            color="0.7" if many else colour[port])
            handles.setdefault("each port" if many else port, line)
        if many:
            m = t.groupby("t_ms").utilisation.mean()
            xs, ys = _step_xy(m.index.to_numpy(), m.to_numpy(), w)
            line, = ax.step(xs, ys, where="pre", lw=1.6, color="black")
            handles.setdefault("mean over ports", line)
        _mark_failures(ax, r, handles)
        ax.set_title(r.label, fontsize=8)
        ax.grid(alpha=0.3, lw=0.5)
        rows.append(t.assign(**r.ids()))
    for k in range(len(with_links), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    for a in axes[-1]:
        a.set_xlabel("time (ms)")
    for a in axes[:, 0]:
        a.set_ylabel("utilisation")
    axes[0][0].set_ylim(bottom=0)
    rect = _legend_below(fig, list(handles.values()), list(handles.keys()), ncol=min(len(handles), 5))
    table = pd.concat(rows, ignore_index=True)
    figs.save(fig, "link_utilisation", table[["run", "scheme", "seed", "group", "t_ms", "port", "bytes", "gbps", "utilisation"]],
              rect=rect)


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
            _mark_failures(a, r, handles)
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


def job_iteration_time(figs: _Figures, done: pd.DataFrame) -> None:
    """``job_iteration_time.png``: every completed iteration of every run of
    a series (``done``: jobs.parquet rows with a ``series`` column), their
    mean and 95 % interval, the ideal dashed."""
    import matplotlib

    fig, ax = figs.plt.subplots(figsize=(6.4, 4.2))
    labels = list(dict.fromkeys(done.series))
    rows = []
    for i, lab in enumerate(labels):
        v = done[done.series == lab].time_us.to_numpy(dtype=float) / 1e3
        m, h, n = mean_ci95(v)
        rows.append({"series": lab, "iterations": n, "mean_ms": m, "ci95_ms": h, "p99_ms": nearest_rank(np.sort(v), 0.99, presorted=True)})
        ax.bar(i, m, yerr=None if math.isnan(h) else h, capsize=3, color=matplotlib.colormaps["tab10"].colors[i % 10])
        ax.plot(np.full(len(v), i), v, "k.", ms=3, alpha=0.5)
    ideal = done.ideal_us.min() / 1e3
    ax.axhline(ideal, color="gray", ls="--", lw=1, label=f"ideal ({ideal:.3g} ms)" if done.ideal_us.nunique() == 1 else "ideal (smallest)")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("iteration time (ms): mean, 95 % CI, each iteration")
    ax.set_title("Collective iteration time", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, lw=0.5, axis="y")
    figs.save(fig, "job_iteration_time", pd.DataFrame(rows))


def job_busbw(figs: _Figures, done: pd.DataFrame) -> None:
    """``job_busbw.png``: bus bandwidth against message size; per run its
    mean over iterations, then the mean and 95 % t interval over a series'
    runs; with one message size, the series side by side."""
    import matplotlib

    fig, ax = figs.plt.subplots(figsize=(6.4, 4.2))
    per_run = done.groupby(["series", "run", "size_bytes"], sort=False).agg(busbw=("busbw_gbps", "mean"), ideal=("ideal_busbw_gbps", "first")).reset_index()
    rows = []
    for i, lab in enumerate(dict.fromkeys(per_run.series)):
        d = per_run[per_run.series == lab]
        xs, ms, hs = [], [], []
        for size, g in d.groupby("size_bytes"):
            m, h, n = mean_ci95(g.busbw)
            xs.append(size)
            ms.append(m)
            hs.append(0.0 if math.isnan(h) else h)
            rows.append({"series": lab, "size_bytes": size, "runs": n, "busbw_gbps_mean": m, "ci95_gbps": h, "ideal_busbw_gbps": float(g.ideal.iloc[0])})
        ax.errorbar(xs, ms, yerr=hs, marker="o", ms=4, capsize=3, label=lab, color=matplotlib.colormaps["tab10"].colors[i % 10])
    ideal = per_run.groupby("size_bytes").ideal.first()
    if len(ideal) == 1:
        # one message size: the series side by side, the ideal a line
        ax.clear()
        for i, r in enumerate(rows):
            ax.errorbar(i, r["busbw_gbps_mean"], yerr=0.0 if math.isnan(r["ci95_gbps"]) else r["ci95_gbps"], marker="o", ms=5,
                        capsize=4, color=matplotlib.colormaps["tab10"].colors[i % 10])
            ax.annotate(f"{r['busbw_gbps_mean'] / r['ideal_busbw_gbps']:.2f}", (i, r["busbw_gbps_mean"]), xytext=(6, -3),
                        textcoords="offset points", fontsize=6)
        ax.axhline(ideal.iloc[0], color="k", ls="--", lw=1, label=f"ideal {ideal.iloc[0]:.1f} Gb/s (idle non-blocking fabric)")
        ax.axhline(0.9 * ideal.iloc[0], color="gray", ls=":", lw=1, label="90 % of ideal")
        ax.set_xticks(range(len(rows)), [f"{r['series']}" for r in rows], rotation=30, ha="right", fontsize=7)
        ax.set_xlabel(f"message size {ideal.index[0]:,} bytes; labels: busbw / ideal")
    else:
        ax.plot(ideal.index, ideal.to_numpy(), "k--", lw=1, label="ideal (idle non-blocking fabric)")
        ax.set_xscale("log")
        ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.set_title("Collective bus bandwidth (mean and 95 % CI over runs)", fontsize=9)
    ax.grid(alpha=0.3, lw=0.5)
    ax.legend(fontsize=6)
    figs.save(fig, "job_busbw", pd.DataFrame(rows))


def failures_table(figs: _Figures, rs: list[Run]) -> None:
    """``failures.csv``: every run's link failures and restores (one
    ``none`` row for a run without)."""
    rows = []
    for r in rs:
        evs = r.failures or [{"link": "", "event": "none", "t_ms": math.nan, "source": ""}]
        rows += [{**r.ids(), **e} for e in evs]
    figs.save_csv("failures", pd.DataFrame(rows, columns=["run", "scheme", "seed", "group", "link", "event", "t_ms", "source"]))
