"""The papers' claims as data: the verdict rules on worked examples (one per
category, as docs/sweeps.md gives them), one estimator per claim, and every
committed claim recomputed from the committed data with its verdict
re-derived from its own fields."""

import json
import math
from pathlib import Path

import pytest

from lbsim.experiments.claims import BOOTSTRAP, GEOMEAN, category, claim_object, estimate, recheck

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "reproduction" / "claims"


def judged(claim: dict, per_seed: list, pivot: float = 1.0, num=None, den=None) -> dict:
    kind = claim.get("kind", "ratio")
    return claim_object(claim, pivot, estimate(kind, per_seed, num, den), per_seed, "t", num, den)


@pytest.mark.parametrize("claim, per_seed, want", [
    # Clove Fig. 4c, Presto over ECMP: 1.50-1.99 overlaps 1.8's band 1.35-2.25
    ({"paper": 1.8}, [1.46, 1.62, 1.94, 1.83, 1.82], "reproduces"),
    # Clove Fig. 5b: 1.69-2.34, wholly below 4.1's band 3.075-5.125
    ({"paper": 4.1}, [1.91, 1.63, 2.31, 2.03, 2.14], "same direction, smaller (32 % of the paper's effect)"),
    # a ratio well past the band: 3.9-4.1 against 2's band 1.5-2.5
    ({"paper": 2.0}, [3.9, 4.0, 4.1], "same direction, larger (300 % of the paper's effect)"),
    # Clove Fig. 4b: 0.928-1.08 contains 1 and lies below 2.5's band 1.875-3.125
    ({"paper": 2.5}, [1.03, 0.972, 1.0], "paper's effect excluded"),
    # Clove Fig. 4b, MPTCP over Clove: 0.920-0.996, below 1 where the paper has 1.2
    ({"paper": 1.2}, [0.941, 0.971, 0.96], "opposite"),
    # CONGA Fig. 11a: 0.793-1.19 holds both 1 and part of 0.7's band 0.525-0.875
    ({"paper": 0.7}, [0.9611, 1.0557, 0.8983], "inconclusive (about 5 seeds would decide at this spread)"),
    # Clove Fig. 4b, Presto over Clove-ECN: 1.010-1.023 within 0.95-1.05
    ({"paper": 1.0}, [1.01, 1.02, 1.02], "no effect, as the paper reports"),
    # VMS Fig. 10a: rate ratio 9.33-10.38 where the paper reports none (0.95-1.05)
    ({"kind": "value", "paper": 1.0}, [9.65, 9.23, 10.3, 10.1, 10.0], "an effect the paper does not report"),
    # a paper number and no difference detectable: 0.98-1.04 straddles 1.05
    ({"paper": 1.0}, [0.98, 1.01, 1.04], "inconclusive (about 5 seeds would decide at this spread)"),
    # a direction only: the paper's band is the side of the pivot
    ({"expect": "greater"}, [2.05, 2.25, 2.56], "reproduces"),
    ({"expect": "greater"}, [0.79, 0.8, 0.81], "opposite"),
])
def test_verdicts_follow_the_rules_on_the_worked_examples(claim, per_seed, want):
    o = judged({"kind": "ratio", **claim}, per_seed, pivot=claim.get("pivot", 1.0))
    assert o["verdict"] == want, o
    assert o["ci_low"] <= o["ours"] <= o["ci_high"]
    assert not recheck(o)


def test_a_tolerance_of_the_claims_own_widens_the_band():
    o = judged({"kind": "ratio", "paper": 4.1, "tolerance": 0.6, "tolerance_why": "read off a log-scale plot"}, [1.91, 1.63, 2.31, 2.03, 2.14])
    assert (o["band_low"], o["band_high"]) == (pytest.approx(1.64), pytest.approx(6.56))
    assert o["verdict"] == "reproduces" and o["tolerance_why"] == "read off a log-scale plot"
    with pytest.raises(ValueError, match="tolerance: a claim's own tolerance needs its reason in tolerance_why"):
        judged({"kind": "ratio", "paper": 4.1, "tolerance": 0.6}, [1.91, 1.63])


def test_the_printed_number_is_the_centre_of_its_own_interval():
    # CONGA Fig. 11c's seeds: the geometric mean (1.61), not the ratio of pooled means (0.725)
    o = judged({"kind": "ratio", "paper": 4.0}, [17.2, 0.521, 0.464])
    assert o["method"] == GEOMEAN
    assert o["ours"] == pytest.approx((17.2 * 0.521 * 0.464) ** (1 / 3))
    assert math.log(o["ours"]) == pytest.approx((math.log(o["ci_low"]) + math.log(o["ci_high"])) / 2)


def test_an_infinite_seed_switches_to_the_bootstrap_and_none_is_dropped():
    # AG Fig. 3a: three of five seeds have no reordering recovery at ratio 1.0
    num, den = [0.003, 0.0061, 0.002, 0.0055, 0.004], [0.0, 0.002, 0.0, 0.002, 0.0]
    per_seed = [math.inf if b == 0 else a / b for a, b in zip(num, den)]
    o = judged({"kind": "ratio", "expect": "greater"}, per_seed, num=num, den=den)
    assert o["method"] == BOOTSTRAP and o["seeds"] == 5
    assert o["ours"] == pytest.approx(sum(num) / sum(den))
    assert o["ci_low"] <= o["ours"] <= o["ci_high"]
    assert not recheck(o)
    # without the arms' values (a ratio of ratios) there is no method: said so, not dropped
    r2 = judged({"kind": "ratio2", "paper": 2.0}, per_seed)
    assert r2["verdict"].startswith("not computable: the per-seed ratio is 0, infinite or undefined in seed(s) 1, 3, 5 of 5")
    assert r2["ours"] is None


def test_every_committed_claim_recomputes_from_the_committed_data():
    """Each experiment's reproduction/claims/<name>.json equals what the
    committed data gives (the run index and per-run statistics; per-seed
    values the object keeps where a statistic needs the catalog), every
    object satisfies ci_low <= ours <= ci_high, and its verdict follows
    from its own fields."""
    from lbsim.experiments import recompute_claims, registry
    from lbsim.experiments.sweep import load

    names = [f.stem for f in registry()]
    assert sorted(p.stem for p in CLAIMS.glob("*.json")) == sorted(names)
    for f in registry():
        objs = json.loads((CLAIMS / f"{f.stem}.json").read_text())
        sw = load(f)
        assert len(objs) == len(sw.spec.get("claim", [])), f.stem
        again = recompute_claims(sw, ROOT / "reproduction" / "data", objs)
        for o, n in zip(objs, again):
            where = (f.stem, o["figure"], o["claim"][:60])
            assert set(o) >= {"figure", "claim", "paper", "pivot", "band_low", "band_high", "ours", "ci_low", "ci_high", "method",
                              "seeds", "per_seed", "verdict", "statement"}, where
            category(o["verdict"])
            assert not recheck(o), (where, recheck(o))
            assert n["verdict"] == o["verdict"], where
            for k in ("ours", "ci_low", "ci_high", "band_low", "band_high"):
                assert (o[k] is None and n[k] is None) or o[k] == pytest.approx(n[k], rel=1e-9), (where, k)


def test_the_report_is_rendered_from_the_claim_files(tmp_path):
    from lbsim.experiments import data_files, papers, registry
    from lbsim.experiments.report import assemble

    out = tmp_path / "REPRODUCTION.md"
    data = data_files(ROOT / "reproduction" / "data")
    assemble(ROOT / "reproduction" / "fragments", [f.stem for f in registry()], out, CLAIMS, papers(), data)
    assert out.read_text() == (ROOT / "REPRODUCTION.md").read_text()


def test_every_committed_run_records_its_scheme_and_revision_and_stale_ones_are_flagged():
    import pandas as pd

    from lbsim.experiments import data_files
    from lbsim.experiments.report import stale_banner
    from lbsim.experiments.sweep import REVISION_COLUMNS

    report = (ROOT / "REPRODUCTION.md").read_text()
    for name, f in data_files(ROOT / "reproduction" / "data").items():
        idx = pd.read_parquet(f)
        assert set(REVISION_COLUMNS) <= set(idx.columns), name
        banner = stale_banner(name, idx)
        assert banner is None or banner in report, name


def test_the_required_cases_read_as_the_rules_say():
    def claims(name):
        return json.loads((CLAIMS / f"{name}.json").read_text())

    clove = [o for o in claims("clove_fig4") if o["figure"] == "4b" and o["paper"] == 2.5]
    assert [category(o["verdict"]) for o in clove] == ["paper's effect excluded"]
    (ag3a,) = [o for o in claims("ag_fig3_4") if o["figure"] == "3a"]
    assert ag3a["ci_low"] <= ag3a["ours"] <= ag3a["ci_high"] and ag3a["seeds"] == 5
    (c11c,) = [o for o in claims("conga_fig11") if o["figure"] == "11c"]
    assert c11c["method"] == GEOMEAN
    assert math.log(c11c["ours"]) == pytest.approx((math.log(c11c["ci_low"]) + math.log(c11c["ci_high"])) / 2)
    # AG Fig. 12's "all R-Squares ... more than 0.94" tests all 10 points
    (ag12,) = claims("ag_fig12")
    assert len(ag12["points"]) == 10 and ag12["ours"] == min(ag12["per_seed"])
