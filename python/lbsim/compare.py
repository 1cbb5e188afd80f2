"""``lbsim compare``: which scheme is better on a fabric, by how much, and
how sure that is.

Every arm (a scheme, optionally with its own overrides:
``ecmp+network.host_jitter_ns=1001``) runs on the same seeds, and a seed
gives every arm the same flows (the traffic has its own random stream, which
no scheme touches), so arms are compared seed by seed. For each metric the
result is the paired ratio arm / baseline over the seeds with a 95 %
interval (``lbsim.stats``) and a plain verdict; where the baseline is 0 in
a seed (ECMP without drops) that seed has no ratio, and the paired
difference arm - baseline per seed is judged instead, saying so. Beside it
stands each arm's own value: the mean over seeds with its 95 % t interval
over seeds.
With ``until``, seeds are added in batches until every interval that can be
judged is within ±``until`` % of its estimate or excludes no difference, or
``max_seeds`` is reached; then the intervals still open are listed with the
seeds each would need (``lbsim.stats.seeds_needed``). An arm whose scheme
hides ECN marks from an ECN-driven transport (Clove-ECN or VMS with DCTCP)
gets the note ``lbsim validate`` prints for it, on stderr and at the top of
compare.md (``arm_notes``).

Runs go through the sweep machinery: ``OUT/compare.sweep.toml`` is an
ordinary sweep file (``lbsim sweep`` reruns it), its runs are cached in
``OUT/compare/runs/``, so a rerun or a larger ``--seeds`` only runs what is
missing. Written: ``compare.json`` (one entry per arm and metric),
``compare.parquet`` (per arm and seed, every metric), ``compare.md`` (the
tables) and figures in ``OUT/figures``; all three files carry the
provenance of the runs they summarise (the runs' summary.json
``provenance``, merged: ``provenance``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from lbsim import _api
from lbsim.errors import LbsimError
from lbsim.stats import Ratio, mean_interval, paired_difference, paired_ratio, seeds_needed, summary_value

#: The metrics every comparison reports: name -> (summary.json path, what
#: it is, its kind: "time" reads "faster / slower", "count" "fewer / more",
#: anything else "lower / higher"). All are better when lower.
METRICS: dict[str, tuple[str, str, str]] = {
    "fct_mean": ("fct_us.mean", "mean FCT", "time"),
    "fct_p50": ("fct_us.p50", "median FCT", "time"),
    "fct_p99": ("fct_us.p99", "p99 FCT", "time"),
    "slowdown_p99": ("slowdown.p99", "p99 slowdown", "level"),
    "drops": ("network.drops.total", "drops", "count"),
    "timeouts": ("transport.timeouts", "timeouts", "count"),
}
#: Per size bucket (summary.json ``buckets``): mean and p99 FCT.
BUCKET_METRICS = {"fct_mean": "mean", "fct_p99": "p99"}
#: The unit of each metric in ``METRICS`` (as docs/metrics.md gives it for
#: its summary.json path); a per-bucket metric has its base's unit.
UNITS = {"fct_mean": "µs", "fct_p99": "µs", "fct_p50": "µs", "slowdown_p99": "", "drops": "packets",
         "timeouts": "events"}
#: The unit of a summary.json path, from its key's suffix (busbw_gbps -> Gb/s).
SUFFIX_UNITS = {"_us": "µs", "_ms": "ms", "_s": "s", "_gbps": "Gb/s", "_bytes": "bytes", "_pkts": "packets"}


class CompareError(LbsimError, ValueError):
    """A bad comparison request (one line naming the option)."""


def metric_values(summary: dict, extra: Sequence[str] = ()) -> dict[str, Optional[float]]:
    """Every compared metric of one run, from its summary.json."""
    out = {name: summary_value(summary, path) for name, (path, _, _) in METRICS.items()}
    for b in summary.get("buckets", []):
        for name, stat in BUCKET_METRICS.items():
            v = b.get("fct_us", {}).get(stat)
            out[f"{name}[{b['bucket']}]"] = None if v is None else float(v)
    for path in extra:
        out[path] = summary_value(summary, path)
    return out


def _words(metric: str) -> tuple[str, str]:
    base = metric.split("[")[0]
    if base in METRICS:
        _, what, kind = METRICS[base]
        if "[" in metric:
            what += " " + metric[metric.index("[") + 1:-1]
        return what, kind
    return metric, "level"


def unit(metric: str) -> str:
    """The unit of a compared metric ("" where none is known)."""
    base = metric.split("[")[0]
    if base in UNITS:
        return UNITS[base]
    for key in reversed(metric.split(".")):
        for suffix, u in SUFFIX_UNITS.items():
            if key.endswith(suffix):
                return u
    return ""


def _num(x: float) -> str:
    """A value for a reader: thousands separated, about three significant
    digits, no exponent."""
    if not math.isfinite(x):
        return "-"
    a = abs(x)
    if a >= 100 or x == round(x) and a >= 1:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return "0" if x == 0 else f"{x:.3g}"


def _better(kind: str, arm: str, baseline: str, what: str, x: float, lo: float, hi: float, better: bool) -> str:
    if kind == "time":
        return f"{arm} is {x:.2f}x {'faster' if better else 'slower'} than {baseline} on {what} ({lo:.2f}-{hi:.2f})"
    word = ("fewer", "more") if kind == "count" else ("lower", "higher")
    return f"{arm} has {x:.2f}x {word[0] if better else word[1]} {what} than {baseline} ({lo:.2f}-{hi:.2f})"


def verdict(metric: str, arm: str, baseline: str, r: Ratio, why: str = "") -> str:
    """A sentence: which arm is better by how much, or that no difference
    is detectable with these seeds. ``r`` is a ratio arm / baseline, or a
    paired difference arm - baseline (``lbsim.stats.paired_difference``),
    whose verdict ends with ``why`` the difference is judged."""
    if r.method == "t on paired differences":
        return _difference_verdict(metric, arm, baseline, r, why)
    what, kind = _words(metric)
    if not (math.isfinite(r.ci_low) and math.isfinite(r.ci_high)):
        return f"{arm} vs {baseline} on {what}: not judged ({r.seeds} seed{'s' if r.seeds != 1 else ''}; an interval needs two with values)"
    if r.ci_high == 0.0:
        return f"{arm} has no {what} in any seed, {baseline} has some"
    if r.ci_high < 1.0:
        inv = lambda v: math.inf if v == 0.0 else 1 / v  # noqa: E731
        return _better(kind, arm, baseline, what, inv(r.ratio), inv(r.ci_high), inv(r.ci_low), True)
    if r.ci_low > 1.0:
        return _better(kind, arm, baseline, what, r.ratio, r.ci_low, r.ci_high, False)
    return f"{arm} vs {baseline} on {what}: no difference detectable with {r.seeds} seeds ({r.ci_low:.2f}-{r.ci_high:.2f})"


def _difference_verdict(metric: str, arm: str, baseline: str, d: Ratio, why: str) -> str:
    what, kind = _words(metric)
    u = unit(metric)
    tail = f"; {why}" if why else ""
    if not (math.isfinite(d.ci_low) and math.isfinite(d.ci_high)):
        return verdict(metric, arm, baseline, Ratio(math.nan, math.nan, math.nan, d.seeds, "none"))
    if d.ci_low == d.ci_high == d.ratio == 0.0:
        return f"{arm} vs {baseline} on {what}: no difference detectable: both are 0 in all {d.seeds} seeds"
    if d.ci_low <= 0.0 <= d.ci_high:
        return (f"{arm} vs {baseline} on {what}: no difference detectable with {d.seeds} seeds (difference per run "
                f"{_num(d.ci_low)} to {_num(d.ci_high)}{' ' + u if u else ''}){tail}")
    more = d.ratio > 0
    x, lo, hi = (d.ratio, d.ci_low, d.ci_high) if more else (-d.ratio, -d.ci_high, -d.ci_low)
    span = f"({_num(lo)} to {_num(hi)}{tail})"
    if kind == "time":
        return f"{arm} is {_num(x)} {u} {'slower' if more else 'faster'} than {baseline} on {what} per run {span}"
    if kind == "count":
        return f"{arm} has {_num(x)} {'more' if more else 'fewer'} {what} per run than {baseline} {span}"
    return f"{arm} has {what} {_num(x)}{' ' + u if u else ''} {'higher' if more else 'lower'} than {baseline} per run {span}"


def _parse_arm(item: str) -> tuple[str, str, dict[str, Any]]:
    """``scheme[+key=value...]`` -> (label, scheme, overrides); a ``+``
    starts an override only where a ``key=`` follows it."""
    import re

    parts = re.split(r"\+(?=[A-Za-z_][\w.\[\]]*=)", item.strip())
    scheme = parts[0].strip()
    if not scheme or "=" in scheme:
        raise CompareError(f"--schemes: {item!r} must start with a scheme name")
    sets: dict[str, Any] = {}
    for kv in parts[1:]:
        key, _, value = kv.partition("=")
        sets[key.strip()] = _api.override_value(value)
    return item.strip(), scheme, sets


def _sweep_file(scenario: Union[str, os.PathLike], arms: list[tuple[str, str, dict]], seeds: list[int], sets: Sequence[str],
                out: Path) -> Path:
    import tomli_w

    base = tomllib.loads(_api.resolved_scenario(scenario, set=sets))
    spec = {
        "experiment": {"name": "compare", "title": f"compare {', '.join(a[0] for a in arms)} on {scenario}"},
        "base": base,
        "axes": {"arm": [a[0] for a in arms], "seed": seeds},
        "keys": {"seed": "seed"},
        "options": {"arm": {label: {"lb.scheme": scheme, **over} for label, scheme, over in arms}},
    }
    path = out / "compare.sweep.toml"
    path.write_text(tomli_w.dumps(spec))
    return path


def arm_notes(scenario: Union[str, os.PathLike], arms: list[tuple[str, str, dict]], sets: Sequence[str]) -> list[str]:
    """The notes ``lbsim validate`` prints (``_api.notes``) for each arm's
    scenario, as "ARM: message" lines: e.g. an arm whose scheme clears CE
    before DCTCP sees it."""
    import copy

    base = tomllib.loads(_api.resolved_scenario(scenario, set=sets))
    out = []
    for label, scheme, over in arms:
        d = copy.deepcopy(base)
        d.setdefault("lb", {})["scheme"] = scheme
        for key, v in over.items():
            t = d
            *head, last = key.split(".")
            for part in head:
                t = t.setdefault(part, {})
            t[last] = v
        out += [f"{label}: {n['message']}" for n in _api.notes(d)]
    return out


def _run(path: Path, out: Path, workers: int, ray: Optional[str], quiet: bool):
    from lbsim.experiments.sweep import catalog_dir, load, run_sweep

    sw = load(path)
    run_sweep(sw, out, workers=workers, ray_address=ray, quiet=quiet)
    return [(pt.axes["arm"], pt.axes["seed"], catalog_dir(out, sw) / "runs" / pt.hash) for pt in sw.points]


#: The keys of a run's summary.json ``provenance`` that compare.parquet
#: carries per run (the command line is the sweep's, not the user's).
RUN_PROVENANCE = ("package_version", "git_commit", "git_dirty", "model_revision", "started_utc", "host", "cpu_model")


def _table(runs, extra: Sequence[str]):
    import pandas as pd

    rows = []
    for arm, seed, d in runs:
        s = json.loads((d / "summary.json").read_text())
        row = {"arm": arm, "scheme": s["scheme"]["name"], "seed": seed, "run": d.name,
               "unfinished": s["flows"]["unfinished"] + s["flows"]["not_started"]}
        row.update(metric_values(s, extra))
        prov = s.get("provenance", {})
        row.update({f"provenance.{k}": _text(prov.get(k)) for k in RUN_PROVENANCE})
        rows.append(row)
    return pd.DataFrame(rows)


def _text(v: Any) -> Optional[str]:
    """A provenance value as text for a parquet column (true, false, ...)."""
    return None if v is None else v if isinstance(v, str) else json.dumps(v)


def provenance(df, command_line: Optional[str]) -> dict:
    """Where a comparison came from: the provenance its runs' summary.json
    files carry, merged (a key every run agrees on has that value, one on
    which they differ, e.g. runs cached from an earlier build, the sorted
    distinct values), the model revision per arm, the first and last run's
    start, and the command that made the comparison."""
    from datetime import datetime, timezone

    def merged(values) -> Any:
        vals = sorted({v for v in values if v is not None})
        return None if not vals else vals[0] if len(vals) == 1 else vals

    out: dict[str, Any] = {}
    for k in RUN_PROVENANCE:
        if k not in ("model_revision", "started_utc"):
            out[k] = merged(df[f"provenance.{k}"])
    if out["git_dirty"] in ("true", "false"):
        out["git_dirty"] = out["git_dirty"] == "true"  # as summary.json has it
    out["model_revision"] = {arm: merged(g) for arm, g in df.groupby("arm", sort=False)["provenance.model_revision"]}
    started = sorted(v for v in df["provenance.started_utc"] if v is not None)
    out["runs_started_utc"] = [started[0], started[-1]] if started else None
    out["command_line"] = command_line
    out["written_utc"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def _absolute(df, arms: list[str], metrics: list[str]) -> list[dict]:
    """Each arm's value per run: the mean over seeds with its t interval."""
    out = []
    for m in metrics:
        for arm in arms:
            v = mean_interval(df.loc[df.arm == arm, m].astype(float).tolist())
            out.append({"metric": m, "unit": unit(m), "arm": arm, "seeds": v.seeds, "mean": v.ratio, "ci_low": v.ci_low,
                        "ci_high": v.ci_high})
    return out


def paired_rows(df, arms: list[str], baseline: str, metrics: list[str]) -> list[dict]:
    """One row per arm other than the baseline and metric: the paired
    comparison (a ratio, or the difference where no ratio exists) beside
    both arms' own values. ``df``: one row per arm and seed (columns
    ``arm``, ``seed`` and the metrics). ``lbsim.plot``'s paired panels draw
    these rows."""
    out = []
    base = df[df.arm == baseline].set_index("seed")
    for arm in arms:
        if arm == baseline:
            continue
        other = df[df.arm == arm].set_index("seed")
        seeds = sorted(set(base.index) & set(other.index))
        for m in metrics:
            a, b = base.loc[seeds, m].astype(float).tolist(), other.loc[seeds, m].astype(float).tolist()
            r, d = paired_ratio(a, b), paired_difference(a, b)
            why, judged, basis = "", r, "ratio"
            zeros = sum(x == 0.0 for x, y in zip(a, b) if math.isfinite(x) and math.isfinite(y))
            ratio_ok = math.isfinite(r.ratio) and math.isfinite(r.ci_low) and math.isfinite(r.ci_high)
            if d.seeds >= 2 and (zeros or not ratio_ok):
                # a seed where the baseline is 0 has no ratio; a ratio of
                # means would rest on the other seeds alone
                if zeros == d.seeds:
                    why = f"{baseline} is 0 in every seed, so no ratio exists and the difference per seed is judged"
                elif zeros:
                    why = (f"{baseline} is 0 in {zeros} of {d.seeds} seeds, which have no ratio, so the difference per seed "
                           "is judged")
                else:
                    why = "the ratio has no interval, so the difference per seed is judged"
                judged, basis = d, "difference"
            ab, ao = mean_interval(a), mean_interval(b)
            out.append({"baseline": baseline, "scheme": arm, "metric": m, "unit": unit(m), "seeds": judged.seeds,
                        "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "method": judged.method,
                        "basis": basis, "why": why or None, "verdict": verdict(m, arm, baseline, judged, why),
                        "difference": d.ratio, "difference_ci_low": d.ci_low, "difference_ci_high": d.ci_high,
                        "baseline_mean": ab.ratio, "baseline_ci_low": ab.ci_low, "baseline_ci_high": ab.ci_high,
                        "arm_mean": ao.ratio, "arm_ci_low": ao.ci_low, "arm_ci_high": ao.ci_high,
                        "_r": judged})
    return out


def next_batch(n: int, max_seeds: int) -> int:
    """The seeds of the next batch after n: n + max(2, n // 2), at most
    ``max_seeds`` (also ``lbsim reproduce --until``'s batches)."""
    return min(max_seeds, n + max(2, n // 2))


def _judgeable(row: dict) -> bool:
    r = row["_r"]
    return r.seeds >= 2 and math.isfinite(r.ci_low) and math.isfinite(r.ci_high) and math.isfinite(r.ratio)


def _spread(row: dict, until_pct: float) -> tuple[float, float]:
    """The row's interval half-width and the half-width that closes it, on
    the scale it is judged on: log(ratio) for a ratio (closed within
    ±until % or excluding 1), the difference itself for a difference
    (closed within ±until % of it or excluding 0)."""
    r = row["_r"]
    if row["basis"] == "difference":  # excluding 0 (half-width < |d|) comes before ±until % (< 100 %) of d
        return max(r.ci_high - r.ratio, r.ratio - r.ci_low), abs(r.ratio)
    if not (r.ratio > 0 and r.ci_low > 0):
        return math.inf, math.log1p(until_pct / 100)
    w = max(math.log(r.ci_high / r.ratio), math.log(r.ratio / r.ci_low))
    return w, max(math.log1p(until_pct / 100), abs(math.log(r.ratio)))


def _closed(row: dict, until_pct: float) -> bool:
    r = row["_r"]
    if row["basis"] == "difference":
        half = max(r.ci_high - r.ratio, r.ratio - r.ci_low)
        return r.ci_low > 0 or r.ci_high < 0 or half <= until_pct / 100 * abs(r.ratio)
    return r.excludes_one() or r.half_width() <= until_pct / 100


def _open(rows: list[dict], until_pct: float) -> list[dict]:
    """The rows whose interval can be judged and is not yet closed."""
    return [r for r in rows if _judgeable(r) and not _closed(r, until_pct)]


def _converged(rows: list[dict], until_pct: float) -> bool:
    return not _open(rows, until_pct)


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def _interval(mean: float, lo: float, hi: float) -> str:
    if not math.isfinite(mean):
        return "-"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return _num(mean)
    return f"{_num(mean)} ({_num(lo)} to {_num(hi)})" if lo < 0 else f"{_num(mean)} ({_num(lo)}-{_num(hi)})"


def absolute_markdown(absolute: list[dict], arms: list[str], baseline: str) -> str:
    """Metric by arm: mean per run over seeds (95 % t interval over seeds)."""
    head = "| metric (unit) | " + " | ".join(f"{a} (baseline)" if a == baseline else a for a in arms) + " |"
    lines = [head, "|---" * (len(arms) + 1) + "|"]
    by = {(a["metric"], a["arm"]): a for a in absolute}
    for m in dict.fromkeys(a["metric"] for a in absolute):
        what, _ = _words(m)
        u = unit(m)
        cells = [_interval(by[m, arm]["mean"], by[m, arm]["ci_low"], by[m, arm]["ci_high"]) for arm in arms]
        lines.append(f"| {what}{f' ({u})' if u else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict]) -> str:
    """The paired comparisons: a ratio arm / baseline, or a difference
    arm - baseline (per run, in the metric's unit) where no ratio exists."""
    lines = ["| metric | arm vs baseline | compared as | estimate | 95 % interval | seeds | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("basis") == "difference":
            u = f" {r['unit']}" if r.get("unit") else ""
            basis, est = "difference", f"{_num(r['difference'])}{u}"
            ci = f"{_num(r['difference_ci_low'])} to {_num(r['difference_ci_high'])}"
        else:
            basis, est, ci = "ratio", _fmt(r["ratio"]), f"{_fmt(r['ci_low'])}-{_fmt(r['ci_high'])}"
        lines.append(f"| {r['metric']} | {r['scheme']} vs {r['baseline']} | {basis} | {est} | {ci} | {r['seeds']} | "
                     f"{r['verdict']} |")
    return "\n".join(lines) + "\n"


def _open_lines(rows: list[dict], until_pct: float) -> list[str]:
    """One line per open interval: what it is and the seeds it would need."""
    out = []
    for r in _open(rows, until_pct):
        w, target = _spread(r, until_pct)
        need = seeds_needed(w, r["_r"].seeds, target)
        if r["basis"] == "difference":
            est = f"difference {_num(r['difference'])} ({_num(r['difference_ci_low'])} to {_num(r['difference_ci_high'])})"
        else:
            est = f"ratio {_fmt(r['ratio'])} ({_fmt(r['ci_low'])}-{_fmt(r['ci_high'])})"
        if need:
            how = f"about {need} seeds would close it"
        elif math.isfinite(w):
            how = "no number of seeds closes it at this spread"
        else:
            how = "the seeds it needs cannot be projected (its interval reaches 0)"
        out.append(f"{r['metric']}, {r['scheme']} vs {r['baseline']}: {est} over {r['_r'].seeds} seeds; {how}")
        r["seeds_needed"] = need
    return out


def compare(scenario: Union[str, os.PathLike], schemes: Sequence[str], *, baseline: Optional[str] = None, seeds: int = 3,
            until: Optional[float] = None, max_seeds: int = 20, set: Optional[Sequence[str]] = None,
            metrics: Optional[Sequence[str]] = None, workers: int = 1, ray: Optional[str] = None,
            out: Union[str, os.PathLike] = "results/compare", quiet: bool = False, figures: bool = True,
            command_line: Optional[str] = None):
    """Compares load-balancing schemes on one scenario over paired seeds.

    ``schemes``: arms, each a scheme name with optional ``+key=value``
    overrides; ``baseline``: the arm the others are divided by (default the
    first); ``metrics``: the metrics to compare, by name (``fct_mean``,
    ``fct_p99[>10MB]``, ...) or as a dotted summary.json path (default: every
    one in ``METRICS`` and per size bucket); ``command_line``: what made the
    comparison, for its provenance (default: this call). Returns a DataFrame
    with one row per arm other than the baseline and metric, with the keys of
    compare.json's rows (docs/sweeps.md, "lbsim compare") but
    ``provenance``, which is in the DataFrame's ``attrs``. See the module's
    doc for what is written under ``out``.
    """
    import pandas as pd

    arms = [_parse_arm(s) for s in schemes]
    labels = [a[0] for a in arms]
    if len(arms) < 2:
        raise CompareError("--schemes: name at least two arms to compare (comma-separated)")
    if len(set_ := {*labels}) != len(labels):
        raise CompareError(f"--schemes: an arm is named twice ({', '.join(sorted(x for x in set_ if labels.count(x) > 1))})")
    baseline = baseline or labels[0]
    if baseline not in labels:
        raise CompareError(f"--baseline {baseline}: not one of the arms ({', '.join(labels)})")
    if seeds < 2:
        raise CompareError(f"--seeds {seeds}: an interval needs at least 2 seeds")
    if until is not None and not (0 < until < 100):
        raise CompareError(f"--until {until}: must be a percentage between 0 and 100")
    if max_seeds < seeds:
        raise CompareError(f"--max-seeds {max_seeds}: must be at least --seeds ({seeds})")
    known = {s["name"] for s in _api.schemes()}
    for label, scheme, _ in arms:
        if scheme not in known:
            raise CompareError(f"--schemes: unknown scheme {scheme!r} in {label!r} (see `lbsim schemes`)")
    for m in metrics or ():
        if "." not in m and m.split("[")[0] not in (METRICS if "[" not in m else BUCKET_METRICS):
            raise CompareError(f"--metrics: unknown metric {m!r} (known: {', '.join(METRICS)}, "
                               f"{', '.join(k + '[BUCKET]' for k in BUCKET_METRICS)}, or a summary.json path)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    notes = arm_notes(scenario, arms, list(set or []))
    for x in notes:
        print(f"compare: note: {x}", file=sys.stderr)
    n = seeds
    while True:
        path = _sweep_file(scenario, arms, list(range(1, n + 1)), list(set or []), out)
        runs = _run(path, out, workers, ray, quiet)
        extra = [m for m in metrics or () if "." in m]
        df = _table(runs, extra)
        names = [c for c in df.columns
                 if c not in ("arm", "scheme", "seed", "run", "unfinished") and not c.startswith("provenance.")]
        if metrics:
            missing = [m for m in metrics if m not in names]
            if missing:
                raise CompareError(f"--metrics: {', '.join(missing)} not in the runs' summaries (known: {', '.join(names)})")
            names = list(metrics)
        rows = paired_rows(df, labels, baseline, names)
        if until is None or _converged(rows, until) or n >= max_seeds:
            break
        n = next_batch(n, max_seeds)
        if not quiet:
            judged = [r for r in rows if _judgeable(r)]
            wide = _open(rows, until)
            print(f"compare: {len(wide)} of {len(judged)} intervals still open (wider than ±{until:g} % and not excluding "
                  f"no difference)" + (f"; {len(rows) - len(judged)} cannot be judged (fewer than two seeds with values)"
                                       if len(judged) < len(rows) else "") + f"; running {n} seeds", file=sys.stderr)
    still_open = _open_lines(rows, until) if until is not None else []
    if still_open and not quiet:
        print(f"compare: --max-seeds {max_seeds} reached with {len(still_open)} interval(s) still open (the seeds each "
              f"would need at the spread seen so far):\n  " + "\n  ".join(still_open), file=sys.stderr)
    for r in rows:
        need = r.pop("seeds_needed", None)
        r["open"] = None if until is None else (_judgeable(r) and not _closed(r, until))
        r["seeds_needed"] = need
    if command_line is None:
        command_line = f"lbsim.compare({os.fspath(scenario)!r}, {list(schemes)!r}" + \
            "".join(f", {k}={v!r}" for k, v in [("baseline", baseline), ("seeds", seeds), ("until", until),
                                                ("max_seeds", max_seeds if until is not None else None), ("set", set),
                                                ("metrics", metrics), ("out", os.fspath(out))] if v) + ")"
    prov = provenance(df, command_line)
    absolute = _absolute(df, labels, names)
    _write_parquet(df, out / "compare.parquet", prov)
    public = [{k: v for k, v in r.items() if k != "_r"} for r in rows]
    res = pd.DataFrame(public)
    res.attrs["provenance"] = prov
    (out / "compare.json").write_text(json.dumps([{**{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                                      for k, v in r.items()}, "provenance": prov} for r in public],
                                                 indent=2, ensure_ascii=False) + "\n")
    head = f"# compare: {', '.join(labels)} against {baseline}, {n} seeds\n\nScenario {scenario}" + \
           (f" with {', '.join(set)}" if set else "") + ".\n\n" + "".join(f"Note: {x}\n\n" for x in notes)
    absolute_head = ("## Each arm\n\nMean per run over the seeds, with its 95 % t interval over the seeds.\n\n")
    paired_head = ("\n## Against the baseline\n\nPaired by seed: ratio = arm / baseline per seed (interval 95 %, method "
                   "per row in compare.json); where the baseline is 0 in a seed, that seed has no ratio, and the difference "
                   "arm - baseline per seed is judged instead (mean and 95 % t interval, in the metric's unit per run).\n\n")
    unfinished = df.groupby("arm")["unfinished"].sum()
    warn = "".join(f"\nWarning: {a} left {int(u)} flows unfinished or not started over its seeds; its FCT statistics "
                   f"cover completed flows only.\n" for a, u in unfinished.items() if u > 0)
    opened = "" if not still_open else (f"\n## Still open at --max-seeds {max_seeds}\n\nIntervals wider than ±{until:g} % "
                                        "that do not exclude no difference, with the seeds each would need at the spread "
                                        "seen so far (docs/sweeps.md, \"lbsim compare\"):\n\n"
                                        + "".join(f"- {x}\n" for x in still_open))
    (out / "compare.md").write_text(head + absolute_head + absolute_markdown(absolute, labels, baseline) + paired_head
                                    + markdown(rows) + warn + opened + "\n" + provenance_markdown(prov))
    if figures:
        _figures(runs, out / "figures", baseline)
    return res


def _write_parquet(df, path: Path, prov: dict) -> None:
    """Per arm and seed, with the comparison's provenance as JSON in the
    file's metadata (key ``lbsim.provenance``) beside each run's own
    ``provenance.*`` columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pandas(df, preserve_index=False)
    t = t.replace_schema_metadata({**(t.schema.metadata or {}), b"lbsim.provenance": json.dumps(prov).encode()})
    pq.write_table(t, path)


def provenance_markdown(prov: dict) -> str:
    """The provenance as a short section of compare.md."""
    def one(v: Any) -> str:
        return ", ".join(map(str, v)) if isinstance(v, list) else str(v)

    revs = prov.get("model_revision") or {}
    lines = ["## Provenance", "",
             f"- lbsim {one(prov.get('package_version'))}, commit {one(prov.get('git_commit'))}"
             + (" (with uncommitted changes)" if prov.get("git_dirty") is True else ""),
             "- model revision: " + "; ".join(f"{arm} {one(r)}" for arm, r in revs.items()),
             f"- runs started {' to '.join(prov['runs_started_utc']) if prov.get('runs_started_utc') else 'unknown'} on "
             f"{one(prov.get('host'))} ({one(prov.get('cpu_model'))})",
             f"- written {prov.get('written_utc')} by `{prov.get('command_line')}`"]
    return "\n".join(lines) + "\n"


def _figures(runs, fig_dir: Path, baseline: str) -> list[Path]:
    from lbsim.plot import plot_runs

    return plot_runs([d for _, _, d in runs], fig_dir, groups={d: arm for arm, _, d in runs}, baseline=baseline)


def cmd_compare(a) -> None:
    schemes = [s for s in a.schemes.split(",") if s.strip()]
    res = compare(Path(a.scenario), schemes, baseline=a.baseline, seeds=a.seeds, until=a.until, max_seeds=a.max_seeds,
                  set=a.set, metrics=[m for m in (a.metrics or "").split(",") if m.strip()] or None, workers=a.workers, ray=a.ray,
                  out=a.out, quiet=a.quiet, command_line=getattr(a, "command_line", None))
    out = Path(a.out)
    print((out / "compare.md").read_text())
    print(f"wrote {out / 'compare.json'}, {out / 'compare.parquet'}, {out / 'compare.md'}, {out / 'figures'}/")
    if res.empty:
        print("no metric could be compared", file=sys.stderr)


def add_command(sub) -> None:
    c = sub.add_parser("compare", help="compare schemes on a scenario over paired seeds, with intervals and verdicts")
    c.add_argument("scenario", help="scenario file (TOML)")
    c.add_argument("--schemes", required=True, help="comma-separated arms: scheme[+key=value...], e.g. ecmp,conga")
    c.add_argument("--baseline", default=None, help="the arm the others are compared with (default: the first)")
    c.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3; with --until, the first batch)")
    c.add_argument("--until", type=float, default=None, metavar="PCT",
                   help="add seeds until every interval that can be judged is within ±PCT %% or excludes no difference")
    c.add_argument("--max-seeds", type=int, default=20,
                   help="most seeds --until runs (default 20); there it lists the intervals still open and the seeds each needs")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario key for every arm")
    c.add_argument("--metrics", default=None, metavar="LIST",
                   help="comma-separated metrics to compare instead of the default set: names (fct_mean, fct_p99, "
                        "fct_mean[>10MB], drops, ...) or summary.json paths (transport.retransmits; lower is better)")
    c.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    c.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one here)")
    c.add_argument("--out", required=True, help="output folder (runs are cached there: a rerun is free)")
    c.add_argument("--quiet", action="store_true", help="no progress lines")
    c.set_defaults(fn=cmd_compare)


__all__ = ["arm_notes", "compare", "CompareError", "METRICS", "UNITS", "verdict", "metric_values", "paired_rows", "provenance", "unit"]
