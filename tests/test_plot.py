"""``lbsim plot`` comparing several runs: every run in every figure and CSV,
failure times on the time axes, groups of seeds with t intervals over
seeds; a compare's figures draw the intervals compare.json reports."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from lbsim.compare import compare
from lbsim.plot import plot_runs
from lbsim.stats import mean_interval, nearest_rank, paired_difference, t_quantile

SCHEMES = ("ecmp", "spray", "letflow")
FAILURE = 'failures=[{link="L0-S0#0",at_ms=2.0,restore_ms=6.0}]'


def run(out, scheme, *extra):
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(out), "--quiet",
                    "--set", "workload.flows=200", "--set", f'lb.scheme="{scheme}"',
                    "--set", 'metrics.link_samplers=["L0->S*"]', "--set", "metrics.utilization_window_ms=2",
                    "--set", "metrics.flow_rate_window_ms=1", *extra], check=True)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three small runs, one per scheme; letflow's loses L0-S0#0 from 2 to 6 ms."""
    d = tmp_path_factory.mktemp("runs")
    return [run(d / s, s, *(["--set", FAILURE] if s == "letflow" else [])) for s in SCHEMES]


def test_plot_draws_every_run_in_every_figure_and_csv(runs, tmp_path):
    from PIL import Image

    figs = tmp_path / "figs"
    r = subprocess.run([sys.executable, "-m", "lbsim.cli", "plot", *map(str, runs), "--out", str(figs)],
                       capture_output=True, text=True, check=True)
    pngs = ("fct_cdf", "fct_by_size", "slowdown_by_size", "link_utilisation", "flow_goodput")
    for name in pngs:
        p = figs / f"{name}.png"
        assert str(p) in r.stdout
        assert p.stat().st_size > 20_000, name  # drawn, not an empty canvas
        with Image.open(p) as im:
            assert im.size[0] > 600 and im.size[1] > 400, name
            assert len(im.convert("L").getcolors(1 << 16)) > 20, name
    csvs = sorted(figs.glob("*.csv"))
    assert {c.stem for c in csvs} == {*pngs, "failures"}
    summaries = {p.name: json.loads((p / "summary.json").read_text()) for p in runs}
    for c in csvs:
        t = pd.read_csv(c)
        assert {"run", "scheme", "seed"} <= set(t.columns), c.name
        assert set(t.run) == set(SCHEMES), c.name  # every run, named by its folder
        for name, g in t.groupby("run"):
            assert set(g.scheme) == {summaries[name]["scheme"]["name"]}, c.name
            assert set(g.seed) == {summaries[name]["seed"]}, c.name

    # the size buckets are summary.json's, with its nearest-rank percentiles
    by_size = pd.read_csv(figs / "fct_by_size.csv").merge(pd.read_csv(figs / "slowdown_by_size.csv"))
    for name, s in summaries.items():
        for b in s["buckets"]:
            row = by_size[(by_size.run == name) & (by_size.bucket == b["bucket"])].iloc[0]
            assert row.flows == b["flows"]
            if b["completed"]:
                assert row.fct_mean_ms * 1e3 == pytest.approx(b["fct_us"]["mean"])
                assert row.fct_p99_ms * 1e3 == pytest.approx(b["fct_us"]["p99"])
                assert row.slowdown_p99 == pytest.approx(b["slowdown"]["p99"])

    # goodput: the 5 largest flows of each run (plus the aggregate), never all of them
    gp = pd.read_csv(figs / "flow_goodput.csv")
    for p in runs:
        g = gp[gp.run == p.name]
        flows = pd.read_parquet(p / "flows.parquet")
        rated = pd.read_parquet(p / "flow_rates.parquet").flow_id.unique()
        top = flows[flows.flow_id.isin(rated)].sort_values(["size_bytes", "flow_id"], ascending=[False, True]).head(5)
        assert set(g[g.flow_id >= 0].flow_id) == set(top.flow_id)
        assert set(g.series) == {"all flows"} | {f"flow {i}" for i in top.flow_id}

    # utilisation: all runs, every sampled port
    lu = pd.read_csv(figs / "link_utilisation.csv")
    assert lu.groupby("run").port.nunique().to_dict() == {s: 4 for s in SCHEMES}

    # the failure and its restore, for the run that had them; "none" for the others
    f = pd.read_csv(figs / "failures.csv")
    lf = f[f.run == "letflow"].set_index("event")
    assert lf.loc["down", "t_ms"] == 2.0 and lf.loc["up", "t_ms"] == 6.0 and lf.loc["down", "link"] == "L0-S0#0"
    assert set(f[f.run != "letflow"].event) == {"none"}


def test_plot_groups_the_seeds_of_a_scheme(runs, tmp_path):
    ecmp2 = run(tmp_path / "ecmp_seed2", "ecmp", "--seed", "2")
    paths = [runs[0], ecmp2, runs[1]]
    figs = tmp_path / "figs"
    plot_runs(paths, figs, group="scheme")
    per_run = pd.read_csv(figs / "fct_by_size.csv")
    assert set(per_run.group) == {"ecmp", "spray"}
    groups = pd.read_csv(figs / "fct_by_size_groups.csv")
    for name in ("fct_by_size_groups", "slowdown_by_size_groups", "fct_cdf_groups"):
        t = pd.read_csv(figs / f"{name}.csv", dtype={"seed": str})
        assert {"run", "scheme", "seed"} <= set(t.columns)
        assert {r for rs in t.run for r in rs.split(";")} == {"ecmp", "ecmp_seed2", "spray"}, name
        assert set(t[t.group == "ecmp"].seed) == {"1;2"}, name
    # a group's bar: the mean over its runs, a 95 % t interval with n - 1 = 1 degree of freedom
    for bucket in per_run.bucket.unique():
        v = per_run[(per_run.group == "ecmp") & (per_run.bucket == bucket)].fct_mean_ms.dropna()
        g = groups[(groups.group == "ecmp") & (groups.bucket == bucket) & (groups.stat == "fct_mean_ms")].iloc[0]
        assert g.n_runs == 2 and g.n == len(v) and g.basis == "value"
        if len(v) == 2:
            h = t_quantile(0.975, 1) * v.std(ddof=1) / math.sqrt(2)
            assert g.estimate == pytest.approx(v.mean())
            assert (g.ci_low, g.ci_high) == (pytest.approx(v.mean() - h), pytest.approx(v.mean() + h))
        s = groups[(groups.group == "spray") & (groups.bucket == bucket) & (groups.stat == "fct_mean_ms")].iloc[0]
        assert s.n_runs == 1 and math.isnan(s.ci_low)  # no interval from one run
    assert set(groups.basis) == {"value"}  # no baseline, nothing paired
    # utilisation: one panel per scheme; ecmp's two seeds as bands over the ports
    bands = pd.read_csv(figs / "link_utilisation_bands.csv")
    assert set(bands.group) == {"ecmp", "spray"} and set(bands[bands.group == "ecmp"].seed) == {1, 2}
    assert (bands.utilisation_min <= bands.utilisation_mean).all() and (bands.utilisation_mean <= bands.utilisation_max).all()
    assert (bands.ports == 4).all()
    cdf = pd.read_csv(figs / "fct_cdf_groups.csv")
    e = cdf[cdf.group == "ecmp"]
    assert (e.fct_ms_lo <= e.fct_ms_median).all() and (e.fct_ms_median <= e.fct_ms_hi).all()
    assert (figs / "fct_cdf.png").stat().st_size > 20_000


def test_nearest_rank():
    v = list(range(1, 101))
    assert nearest_rank(v, 0.99) == 99 and nearest_rank(v, 0.5) == 50 and nearest_rank(v, 1.0) == 100
    assert math.isnan(nearest_rank([], 0.5))


SMALL = ["workload.flows=200", 'metrics.link_samplers=["L0->S*"]', "metrics.utilization_window_ms=2"]


def _judged(row: dict) -> tuple:
    """compare.json's judged estimate and interval (None: no value)."""
    keys = ("ratio", "ci_low", "ci_high") if row["basis"] == "ratio" else ("difference", "difference_ci_low", "difference_ci_high")
    return tuple(math.nan if row[k] is None else row[k] for k in keys)


def test_a_compares_figures_draw_the_intervals_compare_json_reports(tmp_path):
    """3 schemes x 3 seeds: the bars' intervals are each arm's mean over
    seeds as compare.json gives it, the paired panels' are its paired
    estimates and intervals; utilisation is one panel per arm."""
    compare("examples/small.toml", ["ecmp", "drill", "letflow"], seeds=3, set=SMALL, out=tmp_path, quiet=True)
    rows = {(r["scheme"], r["metric"]): r for r in json.loads((tmp_path / "compare.json").read_text())}
    figs = tmp_path / "figures"
    g = pd.read_csv(figs / "fct_by_size_groups.csv")
    assert set(g.group) == {"ecmp", "drill", "letflow"} and (g.n_runs == 3).all()
    checked = 0
    for stat, metric in (("fct_mean_ms", "fct_mean"), ("fct_p99_ms", "fct_p99")):
        for arm in ("drill", "letflow"):
            for bucket in g.bucket.unique():
                want = rows[arm, f"{metric}[{bucket}]"]
                at = g[(g.group == arm) & (g.bucket == bucket) & (g.stat == stat)].set_index("basis")
                paired = at.drop(index="value").iloc[0]
                assert paired.name == want["basis"] and paired.baseline == "ecmp" and paired.method == want["method"]
                assert paired.n == want["seeds"] == 3
                got = (paired.estimate, paired.ci_low, paired.ci_high)
                assert got == pytest.approx(_judged(want), rel=1e-9, nan_ok=True), (arm, metric, bucket)
                # the bars: ms against compare's µs
                for who, mine in ((arm, at.loc["value"]), ("ecmp", g[(g.group == "ecmp") & (g.bucket == bucket) & (g.stat == stat)].iloc[0])):
                    pre = "arm" if who == arm else "baseline"
                    theirs = [math.nan if want[f"{pre}_{k}"] is None else want[f"{pre}_{k}"] / 1e3 for k in ("mean", "ci_low", "ci_high")]
                    assert [mine.estimate, mine.ci_low, mine.ci_high] == pytest.approx(theirs, rel=1e-9, nan_ok=True), (who, metric)
                checked += 1
    assert checked == 2 * 2 * 3
    # the counts under the bars are per run, not summed over the 9 runs
    per_run = pd.read_csv(figs / "fct_by_size.csv")
    assert len(per_run) == 9 * 3 and per_run.groupby("bucket").flows.sum().sum() == 9 * 200
    bands = pd.read_csv(figs / "link_utilisation_bands.csv")
    assert bands.groupby("group").seed.unique().map(sorted).to_dict() == {a: [1, 2, 3] for a in ("ecmp", "drill", "letflow")}


def test_a_metric_the_baseline_never_has_is_drawn_as_compare_judges_it(tmp_path):
    """Where the baseline is 0 in every seed, the paired panel's row is the
    paired difference, as compare.json's."""
    import importlib

    plot = importlib.import_module("lbsim.plot")
    runs = [plot.Run(tmp_path / f"{a}{seed}", f"{a}{seed}", {"seed": seed, "scheme": {"name": a}}, {}, pd.DataFrame(), group=a)
            for a in ("ecmp", "hermes") for seed in (1, 2, 3)]
    series = [plot.Series(a, [r for r in runs if r.group == a], c) for a, c in (("ecmp", "C0"), ("hermes", "C1"))]
    drops = {"ecmp": [0.0, 0.0, 0.0], "hermes": [900.0, 1000.0, 1100.0]}
    per_run = pd.DataFrame([{**r.ids(), "cat": "all", "drops": drops[r.group][r.seed - 1]} for r in runs])
    figs = plot._Figures(tmp_path, grouped=True, baseline="ecmp")
    fig, ax = figs.plt.subplots()
    (row,) = plot._paired_panel(figs, ax, per_run, series, "cat", ["all"], "drops")
    d = paired_difference(drops["ecmp"], drops["hermes"])
    assert row["basis"] == "difference" and row["method"] == d.method
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == (d.ratio, d.ci_low, d.ci_high)
    values = plot._bar_panel(figs, ax, per_run, series, "cat", ["all"], "drops", log=False)
    m = mean_interval(drops["hermes"])
    assert [(r["estimate"], r["ci_low"], r["ci_high"]) for r in values if r["group"] == "hermes"] == [(m.ratio, m.ci_low, m.ci_high)]


def test_flow_counts_under_bars_are_per_run():
    import importlib

    count = importlib.import_module("lbsim.plot")._per_run_count
    assert count(pd.Series([102, 136, 120])) == "102-136 flows per run"
    assert count(pd.Series([7, 7])) == "7 flows per run" and count(pd.Series([40])) == "40 flows"


def test_job_figures_draw_the_intervals_compare_json_reports(tmp_path):
    """Iteration time and busbw: per run the mean over its iterations, then
    over seeds (never over iterations), the interval compare.json gives
    each arm, and the paired interval of its verdict."""
    job = "jobs=[{ranks=4, placement=\"spread\", size_bytes=2000000, iterations=2}]"
    metrics = {"busbw_gbps": ("jobs.0.busbw_gbps.mean", 1.0), "iteration_ms": ("jobs.0.iteration_us.mean", 1e3)}
    compare("examples/allreduce_leafspine.toml", ["ecmp", "drill"], seeds=2, set=[job], metrics=[m for m, _ in metrics.values()],
            out=tmp_path, quiet=True)
    rows = {r["metric"]: r for r in json.loads((tmp_path / "compare.json").read_text())}
    figs = tmp_path / "figures"
    for name, col in (("job_busbw", "busbw_gbps"), ("job_iteration_time", "iteration_ms")):
        assert (figs / f"{name}.png").stat().st_size > 20_000
        want = rows[metrics[col][0]]
        scale = metrics[col][1]
        per_run = pd.read_csv(figs / f"{name}.csv")
        assert len(per_run) == 4 and set(per_run.iterations) == {2}
        g = pd.read_csv(figs / f"{name}_groups.csv").set_index(["group", "basis"])
        assert (g.n == 2).all()
        for who, pre in (("drill", "arm"), ("ecmp", "baseline")):
            v = g.loc[(who, "value")]
            assert [v.estimate * scale, v.ci_low * scale, v.ci_high * scale] == pytest.approx(
                [want[f"{pre}_mean"], want[f"{pre}_ci_low"], want[f"{pre}_ci_high"]], rel=1e-9), (name, who)
        p = g.loc[("drill", "ratio")]
        assert [p.estimate, p.ci_low, p.ci_high] == pytest.approx([want["ratio"], want["ci_low"], want["ci_high"]], rel=1e-9)
