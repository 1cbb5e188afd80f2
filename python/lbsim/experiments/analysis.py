"""Per-run statistics beyond the summary (computed from the run's tables),
figure drawing and the analytic models (the papers' claims are in
``claims``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from lbsim.experiments.sweep import Point, Sweep, catalog_dir
from lbsim.stats import nearest_rank, summary_value

# ---------------------------------------------------------------- per-run statistics

def _flows(run: Path) -> pd.DataFrame:
    return pd.read_parquet(run / "flows.parquet")


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _until_last_start(run: Path, t_col: str, scale: float) -> Optional[float]:
    return _flows(run).start_us.max() / scale if (run / "flows.parquet").exists() else None


def queue_samples(run: Path, port: Optional[str] = None, until_last_start: bool = True) -> np.ndarray:
    q = pd.read_parquet(run / "queues.parquet")
    if port:
        q = q[q.port == port]
    if until_last_start:
        q = q[q.t_us <= _flows(run).start_us.max()]
    return q.qlen_pkts.to_numpy(dtype=float)


def _imbalance(run: Path, keep, by: list[str], until_last_start: bool) -> np.ndarray:
    """(MAX - MIN) / AVG of the bytes of the sampled ports ``keep`` selects,
    one value per group ``by`` (windows with no traffic skipped)."""
    l = pd.read_parquet(run / "links.parquet")
    l = l[keep(l.port)]
    if until_last_start:
        l = l[l.t_ms <= _flows(run).start_us.max() / 1e3]
    l = l.assign(switch=l.port.str.split("->").str[0])
    g = l.groupby(by).bytes
    mx, mn, avg = g.max(), g.min(), g.mean()
    ok = avg > 0
    return ((mx[ok] - mn[ok]) / avg[ok]).to_numpy()


def imbalance(run: Path, prefix: str = "L0->S", until_last_start: bool = True) -> np.ndarray:
    """(MAX - MIN) / AVG over the sampled ports starting with ``prefix``,
    per window (windows with no traffic skipped)."""
    return _imbalance(run, lambda ports: ports.str.startswith(prefix), ["t_ms"], until_last_start)


def imbalance_per_switch(run: Path, pattern: str, until_last_start: bool = True) -> np.ndarray:
    """(MAX - MIN) / AVG of bytes over each switch's sampled ports matching
    the glob ``pattern`` (e.g. ``T*->A*``: every ToR's uplinks), one value
    per (switch, window) with traffic (Expeditus Fig. 16, CONGA's metric per switch)."""
    from fnmatch import fnmatchcase

    return _imbalance(run, lambda ports: ports.map(lambda p: fnmatchcase(p, pattern)).astype(bool), ["switch", "t_ms"], until_last_start)


def _ratio(a: float, b: float) -> float:
    """a / b; infinite when only b is 0 (a stat that is 0 for b), NaN when both are."""
    if b == 0:
        return math.inf if a > 0 else math.nan
    return a / b


def rx_goodput_gbps(run: Path, prefix: str, t_from_ms: float, t_to_ms: float) -> np.ndarray:
    """Per sampled port starting with ``prefix`` (a receiver's host link),
    its goodput in Gb/s over the windows ending in (from, to] ms: wire bytes
    scaled by 1448/1500 (MSS over a full packet)."""
    l = pd.read_parquet(run / "links.parquet")
    l = l[l.port.str.startswith(prefix) & (l.t_ms > t_from_ms) & (l.t_ms <= t_to_ms)]
    span_s = (t_to_ms - t_from_ms) * 1e-3
    return (l.groupby("port").bytes.sum() * 8 / span_s / 1e9 * 1448 / 1500).to_numpy()


def run_stat(run: Path, name: str) -> float:
    """A scalar statistic of one run: a dotted summary path
    (``fct_us.mean``, ``buckets.0.fct_us.p99``, ``incast.goodput_gbps``) or a
    derived one: ``fct_over_ideal`` (mean FCT / mean ideal FCT),
    ``queue_p90[:PORT]``, ``imbalance_median[:PREFIX]``,
    ``fct_mean[lo:hi]`` (mean FCT in µs of flows with lo <= size < hi),
    ``rx_gbps_{mean,min,iqr}:PREFIX:FROM:TO`` (goodput of each sampled
    receiver link starting with PREFIX over (FROM, TO] ms, then its mean,
    minimum or interquartile range), ``nonloss_fr_per_packet`` (fast recoveries not set off by a
    loss per packet sent: AG Figs. 3a/9b's "3-dupack ratio"), ``cwnd_mean_bytes`` (mean of
    the cwnd samples: AG Fig. 3b), ``owd_r2`` / ``owd_mae_us`` (AG's
    measured path delays against the true ones beside them: R^2 = 1 -
    SS_res / SS_tot over every (time, leaf pair, path) sample, and the mean
    absolute error: Fig. 12), ``goodput_gbps`` (bytes of
    completed flows over the time from the first start to the last finish),
    ``throughput_mean_gbps`` (mean over completed flows of size / FCT:
    Expeditus Fig. 13), ``nfct_{mean,p95,p99}[lo:hi]`` (per-flow FCT over
    the flow's ideal FCT in an idle network, mean or percentile over flows
    with lo <= size < hi: Expeditus' NFCT), ``imbalance_switch_{median,mean,p90,max}:GLOB``
    (per switch and window, (max - min) / mean bytes over its sampled ports
    matching GLOB, e.g. ``T*->A*``)."""
    if name.startswith("gran_in_over_out:"):
        # AG: median train size (leaf 0 -> leaf 1) in (FROM, TO] ms over its
        # median outside that interval (scheme_samples)
        lo, hi = (float(x) * 1e3 for x in name[len("gran_in_over_out:"):].split(":"))
        ss = pd.read_parquet(run / "scheme_samples.parquet")
        g = ss[(ss.metric == "granularity_pkts") & (ss.a == 0) & (ss.b == 1)]
        inside = (g.t_us > lo) & (g.t_us <= hi)
        if not inside.any() or inside.all():
            return math.nan
        return _ratio(nearest_rank(g[inside].value, 0.5), nearest_rank(g[~inside].value, 0.5))
    if name in ("owd_r2", "owd_mae_us"):
        # AG Fig. 12: the measured path delays against the simulator's truth
        # reported beside them (scheme_samples owd_us / true_owd_us)
        ss = pd.read_parquet(run / "scheme_samples.parquet")
        key = ["t_us", "a", "b"]
        m = ss[ss.metric == "owd_us"].set_index(key).value
        t = ss[ss.metric == "true_owd_us"].set_index(key).value
        both = pd.concat([m.rename("m"), t.rename("t")], axis=1).dropna()
        if both.empty:
            return math.nan
        if name == "owd_mae_us":
            return float((both.m - both.t).abs().mean())
        ss_tot = float(((both.t - both.t.mean()) ** 2).sum())
        return 1.0 - float(((both.m - both.t) ** 2).sum()) / ss_tot if ss_tot > 0 else math.nan
    if name == "cwnd_mean_bytes":
        # mean over every congestion-window sample (metrics.cwnd_sample_interval_us)
        p = run / "cwnd.parquet"
        return float(pd.read_parquet(p).cwnd_bytes.mean()) if p.exists() else math.nan
    if name.startswith("rate_ratio:"):
        # rate_ratio:A:B:FROM:TO — goodput of flow A over flow B (flow_rates)
        a, b, lo, hi = name[len("rate_ratio:"):].split(":")
        fr = pd.read_parquet(run / "flow_rates.parquet")
        fr = fr[(fr.t_ms > float(lo)) & (fr.t_ms <= float(hi))]
        per = fr.groupby("flow_id").bytes.sum()
        return _ratio(float(per.get(int(a), 0)), float(per.get(int(b), 0)))
    if name.startswith("drop_"):
        # drop_{hit_mean,hit_min,others_mean,others_over_hit,others_jain}:FROM:TO — per-flow
        # goodput (flow_rates) of the flow the first injected drop hit, or
        # of the others, over windows ending in (FROM, TO] ms
        kind, lo, hi = name[len("drop_"):].split(":")
        inj = _summary(run)["network"].get("injected_drops") or []
        if not inj or inj[0].get("flow_id") is None:
            return math.nan
        hit = inj[0]["flow_id"]
        fr = pd.read_parquet(run / "flow_rates.parquet")
        fr = fr[(fr.t_ms > float(lo)) & (fr.t_ms <= float(hi))]
        n_win = round(float(hi) - float(lo))  # 1 ms windows
        per = fr.groupby("flow_id").bytes.sum() * 8 / ((float(hi) - float(lo)) * 1e-3) / 1e9
        flows = _flows(run).flow_id
        per = per.reindex(flows, fill_value=0.0)
        if kind == "hit_mean":
            return float(per[hit])
        if kind == "hit_min":
            h = fr[fr.flow_id == hit].set_index("t_ms").gbps
            return float(h.min()) if len(h) == n_win else 0.0
        others = per.drop(hit)
        if kind == "others_mean":
            return float(others.mean())
        if kind == "others_over_hit":
            return _ratio(float(others.mean()), float(per[hit]))
        return float(others.sum() ** 2 / (len(others) * (others**2).sum())) if len(others) else math.nan
    if name.startswith("rx_gbps_"):
        # rx_gbps_{mean,min,iqr}:PREFIX:FROM:TO (per-receiver goodput)
        kind, prefix, lo, hi = name[len("rx_gbps_"):].split(":")
        v = rx_goodput_gbps(run, prefix, float(lo), float(hi))
        if not len(v):
            return math.nan
        if kind == "mean":
            return float(v.mean())
        if kind == "min":
            return float(v.min())
        return nearest_rank(v, 0.75) - nearest_rank(v, 0.25)
    if name == "throughput_mean_gbps":
        f = _flows(run)
        f = f[f.completed]
        return float((f.size_bytes * 8 / (f.fct_us * 1e3)).mean()) if len(f) else math.nan
    if name.startswith("nfct_"):
        kind, rng = name[len("nfct_"):].split("[", 1)
        lo, hi = rng.rstrip("]").split(":")
        f = _flows(run)
        f = f[f.completed & (f.size_bytes >= float(lo or 0)) & (f.size_bytes < float(hi or "inf"))]
        if not len(f):
            return math.nan
        r = f.fct_us / f.ideal_fct_us
        return float(r.mean()) if kind == "mean" else nearest_rank(r, float(kind[1:]) / 100)
    if name.startswith("imbalance_switch_"):
        kind, pattern = name[len("imbalance_switch_"):].split(":", 1)
        v = imbalance_per_switch(run, pattern)
        if not len(v):
            return math.nan
        return float({"median": lambda a: nearest_rank(a, 0.5), "mean": np.mean, "max": np.max}.get(kind, lambda a: nearest_rank(a, 0.9))(v))
    if name == "nonloss_fr_per_packet":
        s = _summary(run)
        t, n = s["transport"], s["network"]
        return (t["fast_recoveries"] - t["fast_recoveries_by_loss"]) / max(n["packets_sent"], 1)
    if name == "goodput_gbps":
        f = _flows(run)
        f = f[f.completed]
        span = (f.finish_us.max() - f.start_us.min()) * 1e-6
        return float(f.size_bytes.sum() * 8 / span / 1e9) if span > 0 else math.nan
    if name == "fct_over_ideal":
        f = _flows(run)
        f = f[f.completed]
        return float(f.fct_us.mean() / f.ideal_fct_us.mean())
    if name.startswith("queue_p90"):
        port = name.split(":", 1)[1] if ":" in name else None
        q = queue_samples(run, port)
        return nearest_rank(q, 0.9)
    if name.startswith("imbalance_median"):
        prefix = name.split(":", 1)[1] if ":" in name else "L0->S"
        v = imbalance(run, prefix)
        return nearest_rank(v, 0.5)
    if name.startswith("fct_mean["):
        lo, hi = name[len("fct_mean["):-1].split(":")
        f = _flows(run)
        f = f[f.completed & (f.size_bytes >= float(lo or 0)) & (f.size_bytes < float(hi or "inf"))]
        return float(f.fct_us.mean())
    v = summary_value(_summary(run), name)
    return math.nan if v is None else v


class Runs:
    """The runs of a sweep with lookups by axis values."""

    def __init__(self, sw: Sweep, root: str | Path):
        self.sw = sw
        self.dir = catalog_dir(root, sw) / "runs"
        self.points = [p for p in sw.points if (self.dir / p.hash / "summary.json").exists()]
        self._cache: dict[tuple[str, str], float] = {}

    def select(self, where: dict) -> list[Point]:
        def match(p: Point) -> bool:
            for k, v in where.items():
                pv = p.axes.get(k)
                if isinstance(v, list):  # any of
                    if pv not in v:
                        return False
                elif isinstance(v, float) or isinstance(pv, float):
                    if pv is None or abs(float(pv) - float(v)) > 1e-9:
                        return False
                elif pv != v:
                    return False
            return True

        return [p for p in self.points if match(p)]

    def stat(self, p: Point, name: str) -> float:
        key = (p.hash, name)
        if key not in self._cache:
            self._cache[key] = run_stat(self.dir / p.hash, name)
        return self._cache[key]

    def mean_stat(self, where: dict, name: str) -> tuple[float, float, float, int]:
        """Mean over the matching runs (seeds), with min and max."""
        vals = [self.stat(p, name) for p in self.select(where)]
        vals = [v for v in vals if not math.isnan(v)]
        if not vals:
            return math.nan, math.nan, math.nan, 0
        return float(np.mean(vals)), float(min(vals)), float(max(vals)), len(vals)

    def path(self, p: Point) -> Path:
        return self.dir / p.hash


# ---------------------------------------------------------------- overload

def overload_specs(spec: dict) -> list[dict]:
    """The sweep's ``[[overload]]`` entries: where = {axes}, x = axis,
    above = value, why = text. A point matching ``where`` whose ``x`` value
    is above ``above`` offers more than the capacity left: every scheme's
    queues grow over the whole run, so its numbers are marked and no ratio
    is quoted there."""
    return spec.get("overload", [])


def _matches(where: dict, axes: dict) -> bool:
    return all(k not in axes or axes[k] == v or (isinstance(v, float) and abs(float(axes[k]) - v) < 1e-9) for k, v in where.items())


def overloaded(spec: dict, axes: dict) -> Optional[dict]:
    """The overload entry that covers a point (or a figure's/claim's
    selection), if any."""
    for o in overload_specs(spec):
        x = axes.get(o.get("x", "load"))
        if x is not None and float(x) > float(o["above"]) + 1e-9 and _matches(o.get("where", {}), axes):
            return o
    return None


# ---------------------------------------------------------------- models

# Analytic models a figure or claim may evaluate: the simulator's own code
# through the bindings (the `ag` scheme runs the same functions).
MODEL_FUNCTIONS = ("ag_reorder_probability", "ag_rate_gbps", "ag_optimal_granularity")


def model_call(function: str, args: dict) -> float:
    """One value of a named model function (ValueError naming the field)."""
    import lbsim

    if function not in MODEL_FUNCTIONS:
        raise ValueError(f"function: {function!r} is not a model; choose one of {', '.join(MODEL_FUNCTIONS)}")
    try:
        return float(getattr(lbsim, function)(**args))
    except (TypeError, ValueError) as e:
        raise ValueError(f"args of {function} {args}: {e}") from None


def model_argmax(function: str, args: dict, over: str, values: list) -> float:
    """The value of argument `over` (among `values`) where the model peaks (the first on ties)."""
    best = max(values, key=lambda v: (model_call(function, {**args, over: v}), -values.index(v)))
    return float(best)


def argmin_over(runs: "Runs", where: dict, x_axis: str, over: str, stat: str) -> list[tuple[Any, Any, float]]:
    """Per value of `x_axis`, the value of axis `over` with the lowest mean `stat` (and that mean)."""
    out = []
    for x in sorted({p.axes[x_axis] for p in runs.select(where)}):
        best = None
        for o in sorted({p.axes[over] for p in runs.select({**where, x_axis: x})}):
            m, _, _, n = runs.mean_stat({**where, x_axis: x, over: o}, stat)
            if n and (best is None or m < best[1]):
                best = (o, m)
        if best is not None:
            out.append((x, best[0], best[1]))
    return out


# ---------------------------------------------------------------- figures

def _series_values(runs: Runs, fig: dict, series_axis: str) -> list:
    vals = runs.sw.spec["axes"].get(series_axis, [])
    if runs.sw.quick:
        vals = runs.sw.spec.get("quick", {}).get("axes", {}).get(series_axis, vals)
    return fig.get("series_order", vals)


def _label(fig: dict, v: Any) -> str:
    return fig.get("labels", {}).get(str(v), str(v))


def draw(runs: Runs, fig: dict, out_dir: Path, stem: str) -> pd.DataFrame:
    """Draws one figure from the runs of the seed axis (so every point of a
    line is a mean over the same seeds; seeds ``[[added_seeds]]`` adds
    serve the claims); returns the plotted numbers as a table."""
    import copy

    runs = copy.copy(runs)
    runs.points = [p for p in runs.points if not p.added]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # fixed SVG element ids: the same results redraw to the same bytes
    plt.rcParams["svg.hashsalt"] = "lbsim"
    kind = fig["kind"]
    where = fig.get("where", {})
    series_axis = fig.get("series", "scheme")
    rows = []
    fig_, ax = plt.subplots(figsize=(5.2, 3.6))
    if kind in ("line", "fct_vs_load"):
        x_axis = fig.get("x", "load")
        stat = fig.get("stat", "fct_us.mean")
        norm = fig.get("normalise")
        scale = fig.get("scale", 1.0)
        xs_all = sorted({p.axes[x_axis] for p in runs.select(where)})
        for s in _series_values(runs, fig, series_axis):
            xs, ys, lo, hi = [], [], [], []
            for x in xs_all:
                w = {**where, series_axis: s, x_axis: x}
                m, mn, mx, n = runs.mean_stat(w, stat)
                if n == 0:
                    continue
                d = 1.0
                if norm:
                    d, _, _, nd = runs.mean_stat({**where, series_axis: norm, x_axis: x}, stat)
                    if nd == 0 or not d:
                        continue
                xs.append(x)
                ys.append(m / d * scale)
                lo.append(mn / d * scale)
                hi.append(mx / d * scale)
                rows.append({"series": s, x_axis: x, "value": m / d * scale, "min": mn / d * scale, "max": mx / d * scale, "runs": n})
            if xs:
                ax.errorbar(xs, ys, yerr=[np.array(ys) - lo, np.array(hi) - ys], marker="o", ms=3, capsize=2, label=_label(fig, s))
        bound = fig.get("bound")
        if bound:
            bw = bound["where"]
            xs, ys = [], []
            for x in xs_all:
                m, _, _, n = runs.mean_stat({**bw, x_axis: x}, stat)
                if n:
                    xs.append(x)
                    ys.append(m * scale)
                    rows.append({"series": bound["label"], x_axis: x, "value": m * scale, "min": math.nan, "max": math.nan, "runs": n})
            if xs:
                ax.plot(xs, ys, "k--", lw=1, label=bound["label"])
        for o in overload_specs(runs.sw.spec):
            if o.get("x", "load") == x_axis and _matches(o.get("where", {}), where) and all(k in where for k in o.get("where", {})):
                hi_x = max(xs_all) if xs_all else float(o["above"])
                ax.axvspan(float(o["above"]), hi_x + 0.05, color="0.85", zorder=0)
                ax.text(float(o["above"]), ax.get_ylim()[1], " overload", va="top", fontsize=7, color="0.3")
        ax.set_xlabel(fig.get("xlabel", x_axis))
    elif kind in ("cdf", "fct_cdf", "queue_cdf", "imbalance_cdf"):
        for s in _series_values(runs, fig, series_axis):
            vals = []
            for p in runs.select({**where, series_axis: s}):
                path = runs.path(p)
                if kind == "queue_cdf":
                    vals.append(queue_samples(path, fig.get("port")))
                elif kind == "imbalance_cdf" and "per_switch" in fig:
                    vals.append(imbalance_per_switch(path, fig["per_switch"]))
                elif kind == "imbalance_cdf":
                    vals.append(imbalance(path, fig.get("prefix", "L0->S")))
                else:
                    f = _flows(path)
                    f = f[f.completed & (f.size_bytes >= fig.get("min_bytes", 0)) & (f.size_bytes < fig.get("max_bytes", float("inf")))]
                    if "class" in fig:  # one class of a workload.classes mixture
                        if "class" not in f.columns:
                            raise ValueError(f"{path}: no flow classes in this run (written before workload.classes existed?)")
                        f = f[f["class"] == fig["class"]]
                    vals.append(f.fct_us.to_numpy() * fig.get("scale", 1.0))
            if not vals:
                continue
            v = np.sort(np.concatenate(vals))
            if not len(v):
                continue
            y = np.arange(1, len(v) + 1) / len(v)
            ax.plot(v, y, label=_label(fig, s))
            for q in (0.5, 0.9, 0.99):
                rows.append({"series": s, "quantile": q, "value": nearest_rank(v, q, presorted=True), "samples": len(v)})
        ax.set_ylabel("CDF")
        if fig.get("logx"):
            ax.set_xscale("log")
    elif kind == "model":
        # an analytic curve from the simulator's own model code, no runs:
        # `function` of `x` over `x_values`, one line per `series_values`,
        # fixed `args`; `sim_argmin` overlays, per value of its `x`, the
        # axis value `over` with the lowest mean `stat` in the runs
        x_name, s_name = fig["x"], fig.get("series")
        for sv in fig.get("series_values", [None]):
            args = {**fig.get("args", {}), **({s_name: sv} if s_name else {})}
            ys = [model_call(fig["function"], {**args, x_name: x}) for x in fig["x_values"]]
            label = _label(fig, f"{s_name} = {sv}") if s_name else fig.get("label", fig["function"])
            ax.plot(fig["x_values"], ys, marker=".", ms=3, lw=1, label=label)
            rows.extend({"series": label, x_name: x, "value": y} for x, y in zip(fig["x_values"], ys))
        sim = fig.get("sim_argmin")
        if sim:
            best = argmin_over(runs, where, sim["x"], sim["over"], sim.get("stat", "fct_us.mean"))
            if best:
                ax.plot([float(b[0]) for b in best], [float(b[1]) for b in best], "ks", ms=5, label=sim.get("label", "simulation"))
                rows.extend({"series": sim.get("label", "simulation"), x_name: b[0], "value": b[1], "stat": b[2]} for b in best)
        ax.set_xlabel(fig.get("xlabel", x_name))
    elif kind == "scheme_timeseries":
        # a scheme metric over time (scheme_samples), e.g. AG's train size:
        # one run per series value (the first matching point), or with
        # `metrics = [...]` several metrics of the first run matching
        # `where` (e.g. AG's measured delay beside the true one)
        a, b = fig.get("a", 0), fig.get("b", 1)
        if "metrics" in fig:
            pts = runs.select(where)
            lines = [(m, pts[0], m) for m in fig["metrics"]] if pts else []
        else:
            lines = [(sv, p[0], fig["metric"]) for sv in _series_values(runs, fig, series_axis) if (p := runs.select({**where, series_axis: sv}))]
        for sv, pt, metric in lines:
            if not (runs.path(pt) / "scheme_samples.parquet").exists():
                continue
            ss = pd.read_parquet(runs.path(pt) / "scheme_samples.parquet")
            g = ss[(ss.metric == metric) & (ss.a == a) & (ss.b == b)]
            ax.plot(g.t_us / 1e3, g.value, lw=1, label=_label(fig, sv))
            rows.extend({"series": sv, "t_ms": t / 1e3, "value": v} for t, v in zip(g.t_us, g.value))
        ax.set_xlabel(fig.get("xlabel", "time (ms)"))
    elif kind == "link_timeseries":
        # one run (the first point matching `where`): throughput over time
        # (links.parquet, metrics.link_samplers) summed per group of ports,
        # `groups = { label = [port, ...] }` (e.g. a path's uplinks at both leaves)
        pts = runs.select(where)
        if pts:
            lk = pd.read_parquet(runs.path(pts[0]) / "links.parquet")
            for label, ports in fig["groups"].items():
                missing = sorted(set(ports) - set(lk.port))
                if missing:
                    raise ValueError(f"groups.{label}: {', '.join(missing)} not sampled in this run (metrics.link_samplers)")
                g = lk[lk.port.isin(ports)].groupby("t_ms").gbps.sum()
                ax.plot(g.index, g.values, marker=".", ms=3, lw=1, label=label)
                rows.extend({"series": label, "t_ms": t, "value": v} for t, v in g.items())
        ax.set_xlabel(fig.get("xlabel", "time (ms)"))
    elif kind == "bar":
        # one bar per series value (mean over the matching runs, whiskers
        # min to max); `stats = [...]` groups several stats per value
        stats = fig.get("stats", [fig.get("stat", "fct_us.mean")])
        names = fig.get("stat_labels", stats)
        if not stats or len(names) != len(stats):
            raise ValueError(f"stats: give at least one, and as many stat_labels ({len(names)}) as stats ({len(stats)})")
        scale = fig.get("scale", 1.0)
        svals = _series_values(runs, fig, series_axis)
        width = 0.8 / len(stats)
        for j, (st, name) in enumerate(zip(stats, names)):
            xs, ys, lo, hi = [], [], [], []
            for i, sv in enumerate(svals):
                m, mn, mx, n = runs.mean_stat({**where, series_axis: sv}, st)
                if n == 0:
                    continue
                xs.append(i + (j - (len(stats) - 1) / 2) * width)
                ys.append(m * scale)
                lo.append(m * scale - mn * scale)
                hi.append(mx * scale - m * scale)
                rows.append({"series": sv, "stat": st, "value": m * scale, "min": mn * scale, "max": mx * scale, "runs": n})
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name if len(stats) > 1 else None)
        ax.set_xticks(range(len(svals)), [_label(fig, sv) for sv in svals])
    elif kind == "flow_timeseries":
        # one run (the first point matching `where`): each flow's receive-side
        # goodput per window (metrics.flow_rate_window_ms)
        pts = runs.select(where)
        if pts:
            fr = pd.read_parquet(runs.path(pts[0]) / "flow_rates.parquet")
            for fid, g in fr.groupby("flow_id"):
                ax.plot(g.t_ms, g.gbps, lw=1, label=f"flow {fid}")
                rows.extend({"series": f"flow {fid}", "t_ms": t, "value": v} for t, v in zip(g.t_ms, g.gbps))
        ax.set_xlabel(fig.get("xlabel", "time (ms)"))
    else:
        raise ValueError(f"figure kind {kind!r} unknown")
    if fig.get("logy"):
        ax.set_yscale("log")
    ax.set_ylabel(fig.get("ylabel", ax.get_ylabel()))
    if kind not in ("line", "fct_vs_load", "flow_timeseries", "scheme_timeseries", "link_timeseries", "model"):
        ax.set_xlabel(fig.get("xlabel", ""))
    ax.set_title(fig.get("title", ""), fontsize=9)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig_.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    for ext in ("png", "svg"):
        fig_.savefig(out_dir / f"{stem}.{ext}", dpi=120, metadata={"Date": None} if ext == "svg" else None)
    plt.close(fig_)
    table = pd.DataFrame(rows)
    table.to_csv(out_dir / f"{stem}.csv", index=False)
    return table
