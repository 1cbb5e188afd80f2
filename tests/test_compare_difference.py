"""`lbsim compare` never hides a difference: a baseline without drops
against an arm with drops gives a difference verdict with an interval
(statistics layer on synthetic per-seed tables, and one small real run);
each arm's own values lead compare.md; `--until` counts only intervals that
can close and lists the open ones with the seeds each would need; the
outputs carry the runs' provenance."""

import importlib
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from lbsim.stats import paired_difference, seeds_needed, t_quantile

cmp = importlib.import_module("lbsim.compare")  # the module (lbsim.compare is also the function)

ROOT = Path(__file__).resolve().parent.parent
TESTBED = ROOT / "examples" / "clove_testbed.toml"
DCTCP = ["workload.flows=300", 'transport.cc="dctcp"', "network.ecn_k_pkts=20", "network.buffer_pkts=400"]
NEWRENO = "ecmp+transport.cc=newreno"


def _synthetic() -> pd.DataFrame:
    """Three arms over three seeds: ecmp never drops, hermes does."""
    rows = []
    for seed, (fe, fh, fc, dh, dc) in enumerate([(100.0, 200.0, 101.0, 900.0, 0.0), (110.0, 230.0, 108.0, 1000.0, 0.0),
                                                 (120.0, 250.0, 125.0, 1100.0, 0.0)], start=1):
        rows += [{"arm": "ecmp", "seed": seed, "fct_mean": fe, "drops": 0.0, "fct_p99[>10MB]": None},
                 {"arm": "hermes", "seed": seed, "fct_mean": fh, "drops": dh, "fct_p99[>10MB]": None},
                 {"arm": "clove_ecn", "seed": seed, "fct_mean": fc, "drops": dc, "fct_p99[>10MB]": None}]
    return pd.DataFrame(rows)


def test_the_paired_difference_matches_a_hand_computed_case():
    # differences 900, 1000, 1100: mean 1000, sd 100, se 100 / sqrt(3),
    # t(0.975, 2) = 4.302653: half-width 248.414
    d = paired_difference([0.0, 0.0, 0.0], [900.0, 1000.0, 1100.0])
    assert d.method == "t on paired differences" and d.seeds == 3
    assert abs(d.ratio - 1000.0) < 1e-9
    assert abs(d.ci_low - (1000 - 248.414)) < 1e-3 and abs(d.ci_high - (1000 + 248.414)) < 1e-3


def test_a_baseline_without_drops_gets_a_difference_verdict_not_a_hidden_row():
    rows = cmp.paired_rows(_synthetic(), ["ecmp", "hermes", "clove_ecn"], "ecmp", ["fct_mean", "drops", "fct_p99[>10MB]"])
    by = {(r["scheme"], r["metric"]): r for r in rows}
    hermes = by["hermes", "drops"]
    assert hermes["basis"] == "difference" and hermes["method"] == "t on paired differences"
    assert not math.isfinite(hermes["ratio"])  # no ratio exists
    assert abs(hermes["difference"] - 1000.0) < 1e-9 and 700 < hermes["difference_ci_low"] < hermes["difference_ci_high"] < 1300
    assert hermes["verdict"].startswith("hermes has 1,000 more drops per run than ecmp (752 to 1,248; ")
    assert "ecmp is 0 in every seed" in hermes["why"] and hermes["why"] in hermes["verdict"]
    assert hermes["baseline_mean"] == 0.0 and hermes["arm_mean"] == 1000.0
    # both arms without drops: judged too, as no difference
    clove = by["clove_ecn", "drops"]
    assert clove["basis"] == "difference" and "no difference detectable" in clove["verdict"]
    # a ratio where one exists, with both arms' own values beside it
    fct = by["hermes", "fct_mean"]
    assert fct["basis"] == "ratio" and fct["why"] is None and fct["verdict"].startswith("hermes is 2.")
    assert abs(fct["baseline_mean"] - 110.0) < 1e-9 and fct["arm_ci_low"] < fct["arm_mean"] < fct["arm_ci_high"]
    # a bucket no flow fell into cannot be judged
    assert by["hermes", "fct_p99[>10MB]"]["verdict"].endswith("an interval needs two with values)")

    md = cmp.absolute_markdown(cmp._absolute(_synthetic(), ["ecmp", "hermes", "clove_ecn"], ["fct_mean", "drops"]),
                               ["ecmp", "hermes", "clove_ecn"], "ecmp")
    assert md.splitlines()[0] == "| metric (unit) | ecmp (baseline) | hermes | clove_ecn |"
    assert "| drops (packets) | 0 (0-0) | 1,000 (752-1,248) | 0 (0-0) |" in md
    assert "| mean FCT (µs) | 110 (85.2-135) |" in md
    paired = cmp.markdown(rows)
    assert "| drops | hermes vs ecmp | difference | 1,000 packets | 752 to 1,248 | 3 | hermes has 1,000 more drops" in paired


def test_a_baseline_with_drops_in_one_seed_of_three_is_not_judged_on_that_seed_alone():
    # measured once (DCTCP on the Clove testbed): ECMP 0, 16, 0 drops and
    # DRILL 0, 20, 0; a bootstrap ratio of means says "1.25x (1.25-1.25)"
    df = pd.DataFrame([{"arm": a, "seed": i + 1, "drops": v} for a, vs in [("ecmp", [0.0, 16.0, 0.0]),
                                                                         ("drill", [0.0, 20.0, 0.0])]
                       for i, v in enumerate(vs)])
    (row,) = cmp.paired_rows(df, ["ecmp", "drill"], "ecmp", ["drops"])
    assert row["basis"] == "difference" and row["why"].startswith("ecmp is 0 in 2 of 3 seeds")
    assert row["difference_ci_low"] < 0 < row["difference_ci_high"]
    assert row["verdict"].startswith("drill vs ecmp on drops: no difference detectable with 3 seeds (difference per run -")


def test_seeds_needed_follows_the_stated_formula():
    # s = 1 over 3 seeds: h = t(2) / sqrt(3); to reach 0.5, the smallest m
    # with t(m - 1) / sqrt(m) <= 0.5 is 18 (t(17) / sqrt(18) = 0.4973,
    # t(16) / sqrt(17) = 0.5142)
    h = t_quantile(0.975, 2) / math.sqrt(3)
    assert seeds_needed(h, 3, 0.5) == 18
    assert seeds_needed(h, 3, h) == 3  # narrow enough already
    assert seeds_needed(h, 3, 0.0) is None


def test_until_counts_only_intervals_that_can_close():
    rows = cmp.paired_rows(_synthetic(), ["ecmp", "hermes", "clove_ecn"], "ecmp", ["fct_mean", "drops", "fct_p99[>10MB]"])
    # clove_ecn's mean FCT (1.01, 0.98, 1.04 x ecmp) is open at ±2 %; the
    # empty bucket cannot be judged and is not counted; the rest are closed
    still = cmp._open(rows, 2)
    assert [(r["scheme"], r["metric"]) for r in still] == [("clove_ecn", "fct_mean")]
    lines = cmp._open_lines(rows, 2)
    assert len(lines) == 1 and lines[0].startswith("fct_mean, clove_ecn vs ecmp: ratio 1.011 (")
    assert still[0]["seeds_needed"] > 3 and f"about {still[0]['seeds_needed']} seeds would close it" in lines[0]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """ECMP with DCTCP and a 400-packet buffer (no drops in any seed)
    against ECMP with NewReno (which fills the buffer: drops), and an A/A
    arm, over 3 seeds of 300 flows (about 3 s)."""
    out = tmp_path_factory.mktemp("compare_diff")
    res = cmp.compare(TESTBED, ["ecmp", NEWRENO, "ecmp+network.host_jitter_ns=1001"], seeds=3, set=DCTCP,
                      metrics=["fct_mean", "drops"], out=out, quiet=True, figures=False, command_line="lbsim compare (test)")
    return out, res


def test_a_real_run_shows_the_drops_of_an_arm_against_a_baseline_without(small_run):
    out, res = small_run
    rows = json.loads((out / "compare.json").read_text())
    drops = next(r for r in rows if r["metric"] == "drops" and r["scheme"] == NEWRENO)
    assert drops["baseline_mean"] == 0.0 and drops["ratio"] is None
    assert drops["basis"] == "difference" and drops["difference"] > 0
    assert 0 < drops["difference_ci_low"] <= drops["difference"] <= drops["difference_ci_high"], drops
    assert drops["verdict"].startswith(f"{NEWRENO} has ") and "more drops per run than ecmp (" in drops["verdict"]
    assert "ecmp is 0 in every seed" in drops["verdict"]
    aa = next(r for r in rows if r["metric"] == "drops" and r["scheme"].startswith("ecmp+network"))
    assert aa["basis"] == "difference" and "no difference detectable" in aa["verdict"]
    assert drops["arm_mean"] == drops["difference"] and drops["arm_ci_low"] > 0
    md = (out / "compare.md").read_text()
    assert md.index("## Each arm") < md.index("## Against the baseline") < md.index("## Provenance")
    assert "| drops (packets) | 0 (0-0) | " in md
    assert drops["verdict"] in md and "| difference |" in md
    assert res.attrs["provenance"]["command_line"] == "lbsim compare (test)"


def test_the_outputs_carry_the_runs_provenance(small_run):
    out, _ = small_run
    import pyarrow.parquet as pq

    from lbsim import _lbsim

    rows = json.loads((out / "compare.json").read_text())
    prov = rows[0]["provenance"]
    assert all(r["provenance"] == prov for r in rows)
    summary = json.loads(next((out / "compare" / "runs").glob("*/summary.json")).read_text())["provenance"]
    for k in ("package_version", "git_commit", "git_dirty", "host", "cpu_model"):
        assert prov[k] == summary[k], k
    assert prov["model_revision"] == {a: _lbsim.model_revision(s) for a, s in
                                      [("ecmp", "ecmp"), (NEWRENO, "ecmp"), ("ecmp+network.host_jitter_ns=1001", "ecmp")]}
    assert prov["runs_started_utc"][0] <= prov["runs_started_utc"][1]
    t = pq.read_table(out / "compare.parquet")
    assert json.loads(t.schema.metadata[b"lbsim.provenance"]) == prov
    per_seed = t.to_pandas()
    assert (per_seed["provenance.git_commit"] == summary["git_commit"]).all()
    assert f"commit {summary['git_commit']}" in (out / "compare.md").read_text()


def test_until_at_max_seeds_lists_the_open_intervals(small_run, capsys):
    out, _ = small_run
    # the A/A arm's mean FCT cannot come within ±0.01 % in 3 seeds (the runs are cached)
    res = cmp.compare(TESTBED, ["ecmp", "ecmp+network.host_jitter_ns=1001"], seeds=2, until=0.01, max_seeds=3,
                      set=DCTCP, metrics=["fct_mean"], out=out, figures=False)
    err = capsys.readouterr().err
    assert "compare: 1 of 1 intervals still open" in err
    assert "--max-seeds 3 reached with 1 interval(s) still open" in err
    row = res.iloc[0]
    assert row.open and row.seeds == 3 and row.seeds_needed > 3
    assert f"about {row.seeds_needed} seeds would close it" in err
    md = (out / "compare.md").read_text()
    assert "## Still open at --max-seeds 3" in md and f"about {row.seeds_needed} seeds would close it" in md
