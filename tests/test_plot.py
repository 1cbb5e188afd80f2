"""``lbsim plot`` comparing several runs: every run in every figure and CSV,
failure times on the time axes, groups of seeds with t intervals."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from lbsim.plot import mean_ci95, plot_runs
from lbsim.stats import nearest_rank, t_quantile

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
        assert g.n_runs == 2 and g.runs_with_data == len(v)
        if len(v) == 2:
            assert g["mean"] == pytest.approx(v.mean())
            assert g.ci95_half == pytest.approx(t_quantile(0.975, 1) * v.std(ddof=1) / math.sqrt(2))
        s = groups[(groups.group == "spray") & (groups.bucket == bucket) & (groups.stat == "fct_mean_ms")].iloc[0]
        assert s.n_runs == 1 and math.isnan(s.ci95_half)  # no interval from one run
    cdf = pd.read_csv(figs / "fct_cdf_groups.csv")
    e = cdf[cdf.group == "ecmp"]
    assert (e.fct_ms_lo <= e.fct_ms_median).all() and (e.fct_ms_median <= e.fct_ms_hi).all()
    assert (figs / "fct_cdf.png").stat().st_size > 20_000


def test_group_intervals_and_nearest_rank():
    m, h, n = mean_ci95([1.0, 2.0, 3.0, float("nan")])
    assert (m, n) == (2.0, 3) and h == pytest.approx(t_quantile(0.975, 2) / math.sqrt(3))
    assert math.isnan(mean_ci95([5.0])[1]) and mean_ci95([])[2] == 0
    v = list(range(1, 101))
    assert nearest_rank(v, 0.99) == 99 and nearest_rank(v, 0.5) == 50 and nearest_rank(v, 1.0) == 100
    assert math.isnan(nearest_rank([], 0.5))


def test_busbw_of_one_message_size_is_drawn_per_series_with_t_intervals(tmp_path):
    """One message size: job_busbw.csv has one row per series whose mean and
    interval are those of its runs' mean busbw over iterations, and the
    ideal of the jobs table."""
    job = "jobs=[{ranks=4, placement=\"spread\", size_bytes=2000000, iterations=2}]"
    dirs = {}
    for scheme in ("ecmp", "drill"):
        for seed in (1, 2):
            d = tmp_path / f"{scheme}{seed}"
            subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/allreduce_leafspine.toml", "--out", str(d), "--quiet",
                            "--set", job, "--set", f'lb.scheme="{scheme}"', "--set", f"seed={seed}"], check=True)
            dirs[d] = scheme
    figs = tmp_path / "figs"
    plot_runs(list(dirs), figs, groups=dirs)
    assert (figs / "job_busbw.png").exists()
    got = pd.read_csv(figs / "job_busbw.csv")
    assert len(got) == 2
    for scheme in ("ecmp", "drill"):
        per_run = [pd.read_parquet(d / "jobs.parquet") for d, s in dirs.items() if s == scheme]
        m, h, n = mean_ci95([j.busbw_gbps.mean() for j in per_run])
        row = got[got.series.str.startswith(scheme)].iloc[0]
        assert (row.runs, row.size_bytes) == (2, 2000000)
        assert row.busbw_gbps_mean == pytest.approx(m) and row.ci95_gbps == pytest.approx(h)
        assert row.ideal_busbw_gbps == pytest.approx(per_run[0].ideal_busbw_gbps.iloc[0])
