"""`lbsim compare`: the interval arithmetic against hand-computed values, a
difference it must detect, an A/A comparison it must not call, and
`--until` stopping early on a clear difference but not on a close one."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from lbsim.compare import CompareError, compare
from lbsim.stats import paired_ratio, t_quantile

ROOT = Path(__file__).resolve().parent.parent
TESTBED = ROOT / "examples" / "clove_testbed.toml"
FAILED = 'failures=[{link="S1-L1#0"}]'


def test_t_quantiles_match_the_tables():
    for df, t in [(1, 12.7062), (2, 4.3027), (5, 2.5706), (10, 2.2281), (30, 2.0423)]:
        assert abs(t_quantile(0.975, df) - t) < 1e-4, df


def test_the_paired_interval_matches_a_hand_computed_case():
    # per-seed ratios 1.1, 1.21, 1.0: log ratios 0.09531, 0.19062, 0;
    # mean 0.09531, sd 0.09531, se 0.09531 / sqrt(3) = 0.055027;
    # t(0.975, 2) = 4.302653, half-width 0.236764
    r = paired_ratio([1.0, 1.0, 1.0], [1.1, 1.21, 1.0])
    assert r.method == "t on log ratios" and r.seeds == 3
    assert abs(r.ratio - 1.1) < 1e-12
    assert abs(r.ci_low - math.exp(0.0953102 - 0.236764)) < 1e-5
    assert abs(r.ci_high - math.exp(0.0953102 + 0.236764)) < 1e-5
    assert not r.excludes_one()
    # a zero (no drops in a seed) switches to the bootstrap of the ratio of means
    z = paired_ratio([0, 2, 1], [1, 2, 2])
    assert z.method.startswith("bootstrap") and abs(z.ratio - 5 / 3) < 1e-12
    assert z.ci_low <= z.ratio <= z.ci_high


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One output folder for the tests on the failed-link fabric, so runs
    they share (same scenario, scheme and seed) come from its cache."""
    return tmp_path_factory.mktemp("compare")


def test_hula_beats_ecmp_with_a_failed_link_and_an_a_a_split_does_not(shared):
    tmp_path = shared
    res = compare(TESTBED, ["ecmp", "hula", "ecmp+network.host_jitter_ns=1001"], seeds=3,
                  set=["workload.flows=2000", FAILED], metrics=["fct_mean"], out=tmp_path, workers=2, quiet=True,
                  figures=False)
    hula = res[res.scheme == "hula"].iloc[0]
    assert hula.ci_high < 1.0, hula.verdict  # with a failed link, HULA's interval excludes 1
    assert hula.verdict.startswith("hula is") and "faster than ecmp" in hula.verdict
    aa = res[res.scheme.str.startswith("ecmp+")].iloc[0]
    assert aa.ci_low < 1.0 < aa.ci_high, aa.verdict  # 1 ns more host jitter cannot matter on average
    assert "no difference detectable with 3 seeds" in aa.verdict
    rows = json.loads((tmp_path / "compare.json").read_text())
    assert {r["scheme"] for r in rows} == {"hula", "ecmp+network.host_jitter_ns=1001"}
    assert set(rows[0]) >= {"baseline", "scheme", "metric", "seeds", "ratio", "ci_low", "ci_high", "verdict"}
    import pandas as pd

    per_seed = pd.read_parquet(tmp_path / "compare.parquet")
    assert len(per_seed) == 9 and set(per_seed.seed) == {1, 2, 3}
    # a seed gives every arm the same flows
    assert per_seed.groupby("seed")["run"].nunique().eq(3).all()


def test_until_stops_early_on_a_clear_difference_and_goes_on_for_a_close_one(shared, tmp_path):
    # DRILL (per packet inside capacity-weighted components) is ~1.3x faster than ECMP here
    clear = compare(TESTBED, ["ecmp", "drill"], seeds=3, until=2, max_seeds=7, set=["workload.flows=2000", FAILED],
                    metrics=["fct_mean"], out=shared, quiet=True, figures=False, workers=2)
    assert clear.seeds.iloc[0] == 3 and (clear.ci_high.iloc[0] < 1.0 or clear.ci_low.iloc[0] > 1.0), clear.verdict.iloc[0]
    close = compare(TESTBED, ["ecmp", "ecmp+network.host_jitter_ns=1001"], seeds=3, until=2, max_seeds=5,
                    set=["workload.flows=600", FAILED], metrics=["fct_mean"], out=tmp_path, quiet=True, figures=False,
                    workers=2)
    assert close.seeds.iloc[0] == 5, close.verdict.iloc[0]


def test_a_metric_that_is_zero_in_an_arm_is_judged_not_divided_by():
    """An arm without drops (0 in every seed, or in some) against a
    baseline with drops: a verdict, not a ZeroDivisionError."""
    from lbsim.compare import verdict

    none = paired_ratio([120.0, 80.0, 95.0], [0.0, 0.0, 0.0])
    assert none.ratio == 0.0 and none.ci_high == 0.0
    assert verdict("drops", "mptcp", "ecmp", none) == "mptcp has no drops in any seed, ecmp has some"
    some = paired_ratio([120.0, 80.0, 95.0, 110.0], [0.0, 3.0, 0.0, 2.0])
    assert some.ci_low == 0.0 and 0.0 < some.ratio < 1.0
    assert verdict("drops", "mptcp", "ecmp", some).startswith("mptcp has ")


def test_bad_requests_fail_with_one_line_naming_the_option(tmp_path):
    with pytest.raises(CompareError, match="--schemes: unknown scheme 'nope'"):
        compare(TESTBED, ["ecmp", "nope"], out=tmp_path, figures=False)
    with pytest.raises(CompareError, match="--baseline x"):
        compare(TESTBED, ["ecmp", "hula"], baseline="x", out=tmp_path, figures=False)
    with pytest.raises(CompareError, match="--metrics: unknown metric"):
        compare(TESTBED, ["ecmp", "hula"], metrics=["fct_men"], out=tmp_path, figures=False)
    r = subprocess.run([sys.executable, "-m", "lbsim.cli", "compare", str(TESTBED), "--schemes", "ecmp", "--out",
                        str(tmp_path / "c")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--schemes" in r.stderr, r.stderr


def test_reproduction_verdicts_follow_the_interval():
    from lbsim.experiments.claims import claim_object, estimate

    def verdict(claim: dict, per_seed: list) -> dict:
        return claim_object(claim, 1.0, estimate("ratio", per_seed), per_seed, "t")

    ratio = {"kind": "ratio", "paper": 1.4}
    # Clove Fig. 8a: 1.05, 1.01, 1.01 against the paper's 1.4x: the interval holds 1 and the band's edge
    assert verdict(ratio, [1.05, 1.01, 1.01])["verdict"] == "inconclusive (about 6 seeds would decide at this spread)"
    assert verdict({"kind": "ratio", "paper": 3}, [2.05, 2.25, 2.56])["verdict"] == "reproduces"
    assert verdict(ratio, [3.9, 4.0, 4.1])["verdict"] == "same direction, larger (750 % of the paper's effect)"
    assert verdict(ratio, [0.79, 0.8, 0.81])["verdict"] == "opposite"
    assert verdict(ratio, [1.5])["verdict"] == "not computable: 1 seed: no interval without two"
    same = {"kind": "ratio", "paper": 1.0}
    assert verdict(same, [1.01, 1.02, 1.02])["verdict"] == "no effect, as the paper reports"
    assert verdict(same, [0.98, 1.01, 1.04])["verdict"].startswith("inconclusive")
    r = verdict(ratio, [1.05, 1.01, 1.01])
    assert r["ci_low"] < 1.0 < r["ci_high"]
