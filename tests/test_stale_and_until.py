"""Staleness per scheme (a run recording an older revision of its scheme is
flagged in the report and rerun, alone) and `lbsim reproduce --until`
(seeds added only where a claim is inconclusive, kept in the sweep file)."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from lbsim import _lbsim
from lbsim.experiments import reproduce
from lbsim.experiments.sweep import load, stale_rows, write_index

TINY = Path(__file__).parent / "data" / "tiny_sweep.toml"
OLD = "2000-01-01.1"  # a model revision older than any real one


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository of its own: experiments/ (LBSIM_EXPERIMENTS), and
    reproduction/ and REPRODUCTION.md beside it."""
    ex = tmp_path / "experiments"
    ex.mkdir()
    monkeypatch.setenv("LBSIM_EXPERIMENTS", str(ex))
    return tmp_path


def flows_mtimes(cat: Path) -> dict[str, int]:
    return {d.name: os.stat(d / "flows.parquet").st_mtime_ns for d in (cat / "runs").iterdir()}


def test_a_run_under_an_older_scheme_revision_is_flagged_and_rerun_alone(repo):
    (repo / "experiments" / "tiny.toml").write_text(TINY.read_text().replace("flows = 400", "flows = 150"))
    root = repo / "results"
    out = reproduce("tiny", root=str(root), quiet=True)
    data = repo / "reproduction" / "data" / "tiny.parquet"
    idx = pd.read_parquet(data)
    assert list(idx["model_revision"]) == [_lbsim.model_revision(s) for s in idx["scheme.name"]]
    assert stale_rows(idx).empty and "Stale" not in out.read_text()
    # the conga runs recorded an older revision of their scheme
    cat = root / "tiny"
    sw = load(repo / "experiments" / "tiny.toml")
    conga = {p.hash for p in sw.points if p.axes["scheme"] == "conga"}
    for h in conga:
        f = cat / "runs" / h / "summary.json"
        s = json.loads(f.read_text())
        s["model_revision"] = OLD
        f.write_text(json.dumps(s))
    write_index(sw, cat)  # as the sweep that ran them wrote it
    reproduce("tiny", root=str(root), quiet=True, run=False)  # redraws and copies the index, runs nothing
    old = stale_rows(pd.read_parquet(data))
    assert set(old["hash"]) == conga
    text = out.read_text()
    assert "> **Stale:** 2 of 4 runs predate" in text and f"2 conga runs under {OLD}, now {_lbsim.model_revision('conga')}" in text
    before = flows_mtimes(cat)
    reproduce("tiny", root=str(root), quiet=True)
    after = flows_mtimes(cat)
    assert {h for h in before if before[h] != after[h]} == conga, "exactly the stale runs ran again"
    assert stale_rows(pd.read_parquet(data)).empty and "Stale" not in out.read_text()


UNTIL = """
[axes]
scheme = ["ecmp", "conga", "spray"]
seed = [1, 2]

[keys]
scheme = "lb.scheme"
seed = "seed"

[[figure]]
id = "a"
kind = "line"
x = "seed"
stat = "fct_us.mean"

[[claim]]
figure = "1"
quote = "ECMP's FCT is 1.2x CONGA's"
where = {}
a = { scheme = "ecmp" }
b = { scheme = "conga" }
paper = 1.2

[[claim]]
figure = "2"
quote = "spray completes its 150 flows"
kind = "value"
stat = "flows.completed"
a = { scheme = "spray" }
paper = 150
"""


def test_until_adds_seeds_only_to_the_points_of_inconclusive_claims(repo):
    f = repo / "experiments" / "tiny.toml"
    f.write_text(TINY.read_text().replace("flows = 400", "flows = 150").split("[axes]")[0] + UNTIL)
    root = repo / "results"
    reproduce("tiny", root=str(root), quiet=True)
    claims = repo / "reproduction" / "claims" / "tiny.json"
    ratio, value = json.loads(claims.read_text())
    assert ratio["verdict"].startswith("inconclusive") and ratio["seeds"] == 2
    assert value["verdict"] == "reproduces" and value["seeds"] == 2
    reproduce("tiny", root=str(root), quiet=True, until=True, max_seeds=4)
    ratio, value = json.loads(claims.read_text())
    assert ratio["seeds"] == 4 and len(ratio["per_seed"]) == 4
    assert value["seeds"] == 2, "a decided claim's points get no seed"
    # the seeds added are in the sweep file, so a plain rerun reports the same runs
    sw = load(f)
    assert [a["seeds"] for a in sw.spec["added_seeds"]] == [[3, 4], [3, 4]]
    assert sorted(a["where"]["scheme"] for a in sw.spec["added_seeds"]) == ["conga", "ecmp"]
    seeds = {s: sorted(p.axes["seed"] for p in sw.points if p.axes["scheme"] == s) for s in ("ecmp", "conga", "spray")}
    assert seeds == {"ecmp": [1, 2, 3, 4], "conga": [1, 2, 3, 4], "spray": [1, 2]}
    idx = pd.read_parquet(repo / "reproduction" / "data" / "tiny.parquet")
    assert len(idx) == 10
    # the figure (x = seed) draws the seed axis's runs only
    assert set(pd.read_csv(repo / "reproduction" / "figures" / "tiny_a.csv")["seed"]) == {1, 2}
    reproduce("tiny", root=str(root), quiet=True)
    assert json.loads(claims.read_text())[0]["per_seed"] == ratio["per_seed"]
