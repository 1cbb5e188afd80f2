"""``lbsim compare``: which scheme is better on a fabric, by how much, and
how sure that is.

Every arm (a scheme, optionally with its own overrides:
``ecmp+network.host_jitter_ns=1001``) runs on the same seeds, and a seed
gives every arm the same flows (the traffic has its own random stream, which
no scheme touches), so arms are compared seed by seed. For each metric the
result is the paired ratio arm / baseline over the seeds with a 95 %
interval (``lbsim.stats``) and a plain verdict. With ``until``, seeds are
added in batches until every interval is within ±``until`` % of its ratio or
excludes 1, or ``max_seeds`` is reached.

Runs go through the sweep machinery: ``OUT/compare.sweep.toml`` is an
ordinary sweep file (``lbsim sweep`` reruns it), its runs are cached in
``OUT/compare/runs/``, so a rerun or a larger ``--seeds`` only runs what is
missing. Written: ``compare.json`` (one entry per arm and metric),
``compare.parquet`` (per arm and seed, every metric), ``compare.md`` (the
table) and figures in ``OUT/figures``.
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
from lbsim.stats import Ratio, paired_ratio, summary_value

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


def _better(kind: str, arm: str, baseline: str, what: str, x: float, lo: float, hi: float, better: bool) -> str:
    if kind == "time":
        return f"{arm} is {x:.2f}x {'faster' if better else 'slower'} than {baseline} on {what} ({lo:.2f}-{hi:.2f})"
    word = ("fewer", "more") if kind == "count" else ("lower", "higher")
    return f"{arm} has {x:.2f}x {word[0] if better else word[1]} {what} than {baseline} ({lo:.2f}-{hi:.2f})"


def verdict(metric: str, arm: str, baseline: str, r: Ratio) -> str:
    """A sentence: which arm is better by how much, or that no difference
    is detectable with these seeds."""
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


def _run(path: Path, out: Path, workers: int, ray: Optional[str], quiet: bool):
    from lbsim.experiments.sweep import catalog_dir, load, run_sweep

    sw = load(path)
    run_sweep(sw, out, workers=workers, ray_address=ray, quiet=quiet)
    return [(pt.axes["arm"], pt.axes["seed"], catalog_dir(out, sw) / "runs" / pt.hash) for pt in sw.points]


def _table(runs, extra: Sequence[str]):
    import pandas as pd

    rows = []
    for arm, seed, d in runs:
        s = json.loads((d / "summary.json").read_text())
        row = {"arm": arm, "scheme": s["scheme"]["name"], "seed": seed, "run": d.name,
               "unfinished": s["flows"]["unfinished"] + s["flows"]["not_started"]}
        row.update(metric_values(s, extra))
        rows.append(row)
    return pd.DataFrame(rows)


def _ratios(df, arms: list[str], baseline: str, metrics: list[str]) -> list[dict]:
    out = []
    base = df[df.arm == baseline].set_index("seed")
    for arm in arms:
        if arm == baseline:
            continue
        other = df[df.arm == arm].set_index("seed")
        seeds = sorted(set(base.index) & set(other.index))
        for m in metrics:
            r = paired_ratio(base.loc[seeds, m].astype(float).tolist(), other.loc[seeds, m].astype(float).tolist())
            out.append({"baseline": baseline, "scheme": arm, "metric": m, "seeds": r.seeds, "ratio": r.ratio,
                        "ci_low": r.ci_low, "ci_high": r.ci_high, "method": r.method, "verdict": verdict(m, arm, baseline, r),
                        "_r": r})
    return out


def _converged(rows: list[dict], until_pct: float) -> bool:
    return all(r["_r"].excludes_one() or r["_r"].half_width() <= until_pct / 100 for r in rows
               if math.isfinite(r["ratio"]))


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def markdown(rows: list[dict]) -> str:
    lines = ["| metric | arm / baseline | ratio | 95 % interval | seeds | verdict |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['scheme']} / {r['baseline']} | {_fmt(r['ratio'])} | "
                     f"{_fmt(r['ci_low'])}-{_fmt(r['ci_high'])} | {r['seeds']} | {r['verdict']} |")
    return "\n".join(lines) + "\n"


def compare(scenario: Union[str, os.PathLike], schemes: Sequence[str], *, baseline: Optional[str] = None, seeds: int = 3,
            until: Optional[float] = None, max_seeds: int = 20, set: Optional[Sequence[str]] = None,
            metrics: Optional[Sequence[str]] = None, workers: int = 1, ray: Optional[str] = None,
            out: Union[str, os.PathLike] = "results/compare", quiet: bool = False, figures: bool = True):
    """Compares load-balancing schemes on one scenario over paired seeds.

    ``schemes``: arms, each a scheme name with optional ``+key=value``
    overrides; ``baseline``: the arm the others are divided by (default the
    first); ``metrics``: the metrics to compare, by name (``fct_mean``,
    ``fct_p99[>10MB]``, ...) or as a dotted summary.json path (default: every
    one in ``METRICS`` and per size bucket). Returns a DataFrame with one row per arm and metric: baseline,
    scheme, metric, seeds, ratio, ci_low, ci_high, method, verdict. See the
    module's doc for what is written under ``out``.
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
    n = seeds
    while True:
        path = _sweep_file(scenario, arms, list(range(1, n + 1)), list(set or []), out)
        runs = _run(path, out, workers, ray, quiet)
        extra = [m for m in metrics or () if "." in m]
        df = _table(runs, extra)
        names = [c for c in df.columns if c not in ("arm", "scheme", "seed", "run", "unfinished")]
        if metrics:
            missing = [m for m in metrics if m not in names]
            if missing:
                raise CompareError(f"--metrics: {', '.join(missing)} not in the runs' summaries (known: {', '.join(names)})")
            names = list(metrics)
        rows = _ratios(df, labels, baseline, names)
        if until is None or _converged(rows, until) or n >= max_seeds:
            break
        n = min(max_seeds, n + max(2, n // 2))
        if not quiet:
            wide = [r for r in rows if not (r["_r"].excludes_one() or r["_r"].half_width() <= until / 100)]
            print(f"compare: {len(wide)} interval(s) wider than ±{until:g} % and containing 1; running {n} seeds",
                  file=sys.stderr)
    df.to_parquet(out / "compare.parquet", index=False)
    res = pd.DataFrame([{k: v for k, v in r.items() if k != "_r"} for r in rows])
    (out / "compare.json").write_text(json.dumps([{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                                   for k, v in r.items() if k != "_r"} for r in rows], indent=2) + "\n")
    head = f"# compare: {', '.join(labels)} against {baseline}, {n} seeds\n\nScenario {scenario}" + \
           (f" with {', '.join(set)}" if set else "") + \
           ". Ratio = arm / baseline per seed, paired; interval 95 % (method per row in compare.json).\n\n"
    unfinished = df.groupby("arm")["unfinished"].sum()
    warn = "".join(f"\nWarning: {a} left {int(u)} flows unfinished or not started over its seeds; its FCT statistics "
                   f"cover completed flows only.\n" for a, u in unfinished.items() if u > 0)
    (out / "compare.md").write_text(head + markdown(rows) + warn)
    if figures:
        _figures(runs, out / "figures")
    return res


def _figures(runs, fig_dir: Path) -> list[Path]:
    from lbsim.plot import plot_runs

    return plot_runs([d for _, _, d in runs], fig_dir, groups={d: arm for arm, _, d in runs})


def cmd_compare(a) -> None:
    schemes = [s for s in a.schemes.split(",") if s.strip()]
    res = compare(Path(a.scenario), schemes, baseline=a.baseline, seeds=a.seeds, until=a.until, max_seeds=a.max_seeds,
                  set=a.set, metrics=[m for m in (a.metrics or "").split(",") if m.strip()] or None, workers=a.workers, ray=a.ray, out=a.out, quiet=a.quiet)
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
                   help="add seeds until every interval is within ±PCT %% or excludes 1")
    c.add_argument("--max-seeds", type=int, default=20, help="most seeds --until runs (default 20)")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario key for every arm")
    c.add_argument("--metrics", default=None, metavar="LIST",
                   help="comma-separated metrics to compare instead of the default set: names (fct_mean, fct_p99, "
                        "fct_mean[>10MB], drops, ...) or summary.json paths (transport.retransmits; lower is better)")
    c.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    c.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one here)")
    c.add_argument("--out", required=True, help="output folder (runs are cached there: a rerun is free)")
    c.add_argument("--quiet", action="store_true", help="no progress lines")
    c.set_defaults(fn=cmd_compare)


__all__ = ["compare", "CompareError", "METRICS", "verdict", "metric_values"]
