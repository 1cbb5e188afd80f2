"""The sweep runner: catalog keyed by scenario hash, resumption after a
SIGKILL, identical outputs with 1 worker, 2 workers and Ray; the paper
reproductions in --quick mode."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from lbsim.experiments.sweep import load, run_sweep

HERE = Path(__file__).parent
TINY = HERE / "data" / "tiny_sweep.toml"
ROOT = HERE.parent


def outputs(root: Path, name: str = "tiny") -> dict[str, bytes]:
    runs = root / name / "runs"
    return {d.name: (d / "flows.parquet").read_bytes() for d in sorted(runs.iterdir())}


def test_catalog_has_one_run_per_point_and_an_index(tmp_path):
    sw = load(TINY)
    assert len(sw.points) == 4
    assert len({p.hash for p in sw.points}) == 4
    cat = run_sweep(sw, tmp_path, workers=1, quiet=True)
    idx = pd.read_parquet(cat / "index.parquet")
    assert len(idx) == 4
    assert set(idx["axis.scheme"]) == {"ecmp", "conga"}
    assert (idx["flows.total"] == 400).all()
    assert idx["conservation.ok"].all()
    # a rerun skips finished runs
    before = {p: os.path.getmtime(cat / "runs" / p / "flows.parquet") for p in outputs(tmp_path)}
    run_sweep(sw, tmp_path, workers=1, quiet=True)
    after = {p: os.path.getmtime(cat / "runs" / p / "flows.parquet") for p in outputs(tmp_path)}
    assert before == after
    # a changed parameter is a different run
    text = TINY.read_text().replace("flows = 400", "flows = 401")
    f2 = tmp_path / "tiny2.toml"
    f2.write_text(text)
    assert not {p.hash for p in load(f2).points} & {p.hash for p in sw.points}


def test_a_sweep_killed_mid_run_resumes_to_identical_results(tmp_path):
    clean = tmp_path / "clean"
    run_sweep(load(TINY), clean, workers=1, quiet=True)
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "lbsim.cli", "sweep", str(TINY), "--root", str(killed)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = killed / "tiny" / "runs"
    deadline = time.time() + 60
    while time.time() < deadline:
        done = [d for d in runs.iterdir() if ".tmp-" not in d.name] if runs.exists() else []
        if len(done) >= 1:
            break
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    partial = [d.name for d in runs.iterdir()]
    assert len([d for d in partial if ".tmp-" not in d]) < 4, "killed before the end"
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    names = sorted(d.name for d in runs.iterdir())
    assert not [n for n in names if ".tmp-" in n], "no half-written result survives"
    assert outputs(killed) == outputs(clean)
    idx = pd.read_parquet(killed / "tiny" / "index.parquet")
    assert len(idx) == 4 and idx["hash"].is_unique and idx["conservation.ok"].all()


def test_one_worker_two_workers_and_ray_give_identical_outputs(tmp_path):
    run_sweep(load(TINY), tmp_path / "w1", workers=1, quiet=True)
    run_sweep(load(TINY), tmp_path / "w2", workers=2, quiet=True)
    assert outputs(tmp_path / "w1") == outputs(tmp_path / "w2")


@pytest.mark.filterwarnings("ignore")
def test_ray_local_instance_gives_identical_outputs(tmp_path):
    ray = pytest.importorskip("ray")
    run_sweep(load(TINY), tmp_path / "w1", workers=1, quiet=True)
    try:
        run_sweep(load(TINY), tmp_path / "ray", ray_address="local", quiet=True)
    finally:
        ray.shutdown()
    assert outputs(tmp_path / "w1") == outputs(tmp_path / "ray")


def test_reproduce_list_shows_every_clove_and_conga_figure():
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", "reproduce", "--list"], capture_output=True, text=True, cwd=ROOT, check=True)
    for name in ["clove_fig4", "clove_fig6", "clove_fig7", "clove_fig8", "conga_fig9", "conga_fig10", "conga_fig11", "conga_fig13", "conga_fig15"]:
        assert name in p.stdout, p.stdout
    # every evaluated figure of the five papers is drawn by some experiment
    figs = set()
    for f in (ROOT / "experiments").glob("*.toml"):
        figs |= {(f.stem.split("_")[0], fig["id"]) for fig in load(f).spec.get("figure", [])}
    for fig in ["4b", "4c", "5a", "5b", "5c", "6", "7", "8a", "8b", "9"]:
        assert ("clove", fig) in figs, fig
    for fig in ["9a", "9b", "9c", "10a", "10b", "10c", "11a", "11b", "11c", "12", "13a", "13b", "13c", "13d", "15a", "15b"]:
        assert ("conga", fig) in figs, fig
    for fig in ["13a", "13b", "13c", "14a", "14b", "14c", "15a", "15b", "16a", "16b", "17", "18", "19", "20a", "20b"]:
        assert ("expeditus", fig) in figs, fig
    for fig in ["6", "7", "8", "9", "10a", "10b", "11a", "11b"]:
        assert ("vms", fig) in figs, fig
    # AG Figs. 14-15 (Mininet/BMv2 CPU and memory) are out of scope
    for fig in ["3a", "3b", "4a", "4b", "4c", "4d", "5a", "5b", "7a", "7b", "8model", "8", "9a", "9b", "9c", "9d", "10a", "10d",
                "11a", "11d", "12a", "12b", "12c", "13"]:
        assert ("ag", fig) in figs, fig


@pytest.mark.parametrize("name", ["clove_fig8", "conga_fig9", "expeditus_fig13", "vms_fig6_8", "ag_fig8"])
def test_quick_reproduction_runs_end_to_end(tmp_path, name):
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", "reproduce", name, "--quick", "--workers", "2", "--root", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    report = (tmp_path / "quick-report" / "REPRODUCTION.md").read_text()
    assert "quick mode" in report
    figs = list((tmp_path / "quick-report" / "figures").glob(f"{name}-quick_*.png"))
    assert figs and all(f.stat().st_size > 5000 for f in figs)
    assert list((tmp_path / "quick-report" / "figures").glob(f"{name}-quick_*.svg"))
    # the claims table has our numbers
    rows = [l for l in report.splitlines() if l.startswith("| ") and "paper's claim" not in l and "---" not in l]
    assert rows and any(r.split("|")[4].strip() not in ("n/a", "–", "") for r in rows), report
    # the claims written from the catalog are recomputed exactly from the data the report keeps
    import json

    from lbsim.experiments import recompute_claims

    claims = json.loads((tmp_path / "quick-report" / "claims" / f"{name}.json").read_text())
    assert claims and all("verdict" in c for c in claims)
    again = recompute_claims(load(ROOT / "experiments" / f"{name}.toml", quick=True), tmp_path / "quick-report" / "data", [])
    assert again == claims


def test_exclusions_bound_overload_and_per_seed_claims(tmp_path):
    """[[exclude]] drops points; a figure's bound is drawn from its own
    selection; a claim at an overloaded point is not compared; every other
    claim lists its per-seed values."""
    import json

    from lbsim.experiments.analysis import Runs
    from lbsim.experiments.claims import evaluate
    from lbsim.experiments.report import fragment

    text = TINY.read_text().replace("flows = 400", "flows = 150").split("[axes]")[0] + """
[axes]
fabric = ["normal", "fast"]
scheme = ["ecmp", "conga"]
load = [0.3, 0.6]
seed = [1, 2]

[keys]
scheme = "lb.scheme"
load = "workload.load"
seed = "seed"

[options.fabric.normal]
[options.fabric.fast]
"topology.fabric_rate_gbps" = 400
"workload.capacity_gbps" = 80

[[exclude]]
fabric = "fast"
scheme = ["conga"]

[[overload]]
x = "load"
above = 0.5
why = "test"

[[figure]]
id = "a"
kind = "line"
where = { fabric = "normal" }
bound = { where = { fabric = "fast", scheme = "ecmp" }, label = "bound" }
x = "load"
stat = "fct_us.mean"

[[claim]]
figure = "a"
quote = "below overload"
where = { fabric = "normal", load = 0.3 }
a = { scheme = "ecmp" }
b = { scheme = "conga" }
paper = 1.1

[[claim]]
figure = "a"
quote = "at overload"
where = { fabric = "normal", load = 0.6 }
a = { scheme = "ecmp" }
b = { scheme = "conga" }
paper = 1.1
"""
    f = tmp_path / "ex.toml"
    f.write_text(text)
    sw = load(f)
    assert len(sw.points) == 12  # 16 less the 4 of conga on the fast fabric
    assert not [p for p in sw.points if p.axes["fabric"] == "fast" and p.axes["scheme"] == "conga"]
    run_sweep(sw, tmp_path / "root", workers=2, quiet=True)
    runs = Runs(sw, tmp_path / "root")
    below, over = (evaluate(runs, c) for c in sw.spec["claim"])

    def fct(**axes):
        (p,) = [p for p in sw.points if p.axes == {**axes}]
        return json.loads((runs.dir / p.hash / "summary.json").read_text())["fct_us"]["mean"]

    want = [fct(fabric="normal", scheme="ecmp", load=0.3, seed=s) / fct(fabric="normal", scheme="conga", load=0.3, seed=s) for s in (1, 2)]
    assert below["per_seed"] == pytest.approx(want)
    assert min(want) <= below["ours"] <= max(want)
    assert below["ci_low"] <= below["ours"] <= below["ci_high"]
    assert over["verdict"].startswith("not compared: overload") and over["per_seed"] == []
    md = fragment(sw, tmp_path / "root", tmp_path / "figs", "figs")
    assert "per seed" in md and "not compared: overload" in md
    table = pd.read_csv(tmp_path / "figs" / "tiny_a.csv")
    bound = table[table.series == "bound"]
    assert len(bound) == 2
    assert bound.value.iloc[0] == pytest.approx((fct(fabric="fast", scheme="ecmp", load=0.3, seed=1) + fct(fabric="fast", scheme="ecmp", load=0.3, seed=2)) / 2)


def test_a_bad_point_fails_the_sweep_before_any_run_naming_the_point(tmp_path):
    from lbsim.experiments.sweep import SweepError

    text = TINY.read_text().replace('scheme = ["ecmp", "conga"]', 'scheme = ["ecmp", "cong"]')
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(SweepError) as e:
        run_sweep(load(f), tmp_path / "root", workers=2, quiet=True)
    msg = str(e.value)
    assert "scheme=cong" in msg and "lb.scheme" in msg and "\n" not in msg, msg
    runs = tmp_path / "root" / "tiny" / "runs"
    assert not runs.exists() or not list(runs.iterdir()), "nothing ran"


def test_a_selector_of_the_wrong_type_is_refused_naming_it(tmp_path):
    """seed = "1" against numeric seeds would select nothing (NaN claims)."""
    from lbsim.experiments.sweep import SweepError

    for extra, where in [
        ('\n[[claim]]\nfigure = "x"\nquote = "q"\nwhere = { seed = "1" }\na = { scheme = "ecmp" }\nb = { scheme = "conga" }\n', "[[claim]] #1: where.seed"),
        ('\n[[rule]]\nmatch = { scheme = 1 }\nset = {}\n', "[[rule]] #1: match.scheme"),
    ]:
        f = tmp_path / "typed.toml"
        f.write_text(TINY.read_text() + extra)
        with pytest.raises(SweepError) as e:
            load(f)
        assert where in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_an_axis_mixing_numbers_and_strings_is_refused_naming_it(tmp_path):
    from lbsim.experiments.sweep import SweepError

    f = tmp_path / "mixed.toml"
    f.write_text(TINY.read_text().replace("seed = [1, 2]\n", 'seed = [1, "two"]\n', 1))
    with pytest.raises(SweepError) as e:
        load(f)
    msg = str(e.value)
    assert "axis seed mixes number and str" in msg and "\n" not in msg, msg


def test_model_figures_and_claims_evaluate_the_schemes_own_model(tmp_path):
    """kind = "model": the curve is the bindings' function at every x, the
    simulated overlay is the per-x argmin over the runs, and model claims
    (value, ratio, argmax) get a verdict; an unknown function is refused."""
    import lbsim
    from lbsim.experiments.analysis import Runs, draw
    from lbsim.experiments.claims import evaluate

    text = TINY.read_text().split("[axes]")[0] + """
[axes]
load = [0.2, 0.4]
seed = [1, 2]

[keys]
load = "workload.load"
seed = "seed"
"""
    f = tmp_path / "model.toml"
    f.write_text(text)
    sw = load(f)
    run_sweep(sw, tmp_path / "root", workers=2, quiet=True)
    runs = Runs(sw, tmp_path / "root")
    fig = {"id": "m", "kind": "model", "function": "ag_reorder_probability", "x": "congested", "x_values": [0, 10, 22, 45],
           "series": "gran", "series_values": [1, 15], "args": {"paths": 45, "window_pkts": 44},
           "sim_argmin": {"x": "seed", "over": "load", "label": "sim"}}
    t = draw(runs, fig, tmp_path / "figs", "m")
    # the same results redraw to the same bytes (fixed SVG ids, no dates)
    first = {ext: (tmp_path / "figs" / f"m.{ext}").read_bytes() for ext in ("svg", "png")}
    draw(runs, fig, tmp_path / "figs", "m")
    assert first == {ext: (tmp_path / "figs" / f"m.{ext}").read_bytes() for ext in ("svg", "png")}
    for g in (1, 15):
        got = t[t.series == f"gran = {g}"].set_index("congested").value
        assert got.to_dict() == pytest.approx({m: lbsim.ag_reorder_probability(g, 45, m) for m in (0, 10, 22, 45)})
    sim = t[t.series == "sim"].set_index("congested").value
    for seed in (1, 2):
        best = min((0.2, 0.4), key=lambda x: runs.mean_stat({"load": x, "seed": seed}, "fct_us.mean")[0])
        assert sim[seed] == best
    peak = {"kind": "model", "function": "ag_reorder_probability", "a": {"gran": 8, "paths": 45, "window_pkts": 44},
            "argmax": "congested", "values": list(range(46))}
    top = evaluate(runs, {**peak, "paper": 22.5})
    assert (top["ours"], top["paper"], top["verdict"], top["per_seed"]) == (23.0, 22.5, "reproduces", [])
    assert top["ci_low"] is None and top["method"].endswith("(no interval)")
    # the peak's place reproduces within a tenth of the searched range (4.5 here)
    assert evaluate(runs, {**peak, "paper": 27})["verdict"] == "reproduces"
    assert evaluate(runs, {**peak, "paper": 28})["verdict"] == "paper's effect excluded"
    ratio = {"kind": "model", "function": "ag_optimal_granularity", "a": {"paths": 45, "congested": 10, "rtt_good_us": 250, "rtt_bad_us": 500},
             "b": {"paths": 45, "congested": 1, "rtt_good_us": 250, "rtt_bad_us": 500}}
    r = evaluate(runs, {**ratio, "expect": "greater"})
    assert r["ours"] == pytest.approx(22 / 6) and r["verdict"] == "reproduces"
    with pytest.raises(ValueError, match="^function: 'ag_rate' is not a model"):
        evaluate(runs, {**ratio, "function": "ag_rate"})
    with pytest.raises(ValueError, match="args of ag_optimal_granularity"):
        evaluate(runs, {**ratio, "a": {"paths": 45, "congestd": 1, "rtt_good_us": 250, "rtt_bad_us": 500}})
    with pytest.raises(ValueError, match="args of ag_optimal_granularity.*congested"):
        evaluate(runs, {**ratio, "a": {"paths": 4, "congested": 5, "rtt_good_us": 250, "rtt_bad_us": 500}})
    # a figure's error names the figure
    from lbsim.experiments.report import fragment

    sw.spec["figure"] = [{**fig, "x_values": None, "id": "broken"}]
    del sw.spec["figure"][0]["x_values"]
    with pytest.raises(ValueError, match=r"\[\[figure\]\] broken: missing key 'x_values'"):
        fragment(sw, tmp_path / "root", tmp_path / "figs", "figs")


# ------------------------------------------------------------------ the sweep-file format

DOC = ROOT / "docs" / "sweeps.md"
NO_QUICK = '[quick]\naxes = { seed = [1] }\nset = { "workload.flows" = 100 }\n'


def doc_tables() -> dict[str, dict[str, list[str]]]:
    """docs/sweeps.md as {## heading: {"": its table's keys, ### heading: that table's keys}}."""
    import re

    out: dict[str, dict[str, list[str]]] = {}
    top, sub, code = None, "", False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            code = not code
        elif code:
            continue
        elif line.startswith("## "):
            top, sub = line[3:], ""
            out[top] = {"": []}
        elif line.startswith("### ") and top is not None:
            sub = line[4:]
            out[top][sub] = []
        elif (m := re.match(r"\| `([^`]+)` \|", line)) and top is not None:
            out[top][sub].append(m.group(1))
    return out


def test_docs_sweeps_md_documents_exactly_the_sections_keys_and_kinds_the_parser_reads():
    import re

    from lbsim.experiments.spec import SECTIONS

    text = DOC.read_text()
    # every section it names, in prose or in an example, is one the parser accepts, and it names them all
    named = set(re.findall(r"`\[\[?([A-Za-z_]\w*)", text)) | set(re.findall(r"(?m)^\[\[?([A-Za-z_]\w*)", text))
    assert named == set(SECTIONS), f"undeclared: {named - set(SECTIONS)}, undocumented: {set(SECTIONS) - named}"
    tables = doc_tables()
    assert sorted(tables["Sections"][""]) == sorted(s.written.format(n) for n, s in SECTIONS.items())
    for name, sect in SECTIONS.items():
        head = f"`{sect.written.format(name)}`"
        assert head in tables, f"docs/sweeps.md has no section `## {head}`"
        part = tables[head]
        assert sorted(part[""]) == sorted(sect.keys or {}), f"{head}: documented keys differ from spec.SECTIONS"
        kinds = {k: sub for sub in part if sub for k in re.findall(r'kind = "(\w+)"', sub)}
        assert set(kinds) == set(sect.kinds), f"{head}: documented kinds differ from spec.SECTIONS"
        for k, sub in kinds.items():
            assert sorted(part[sub]) == sorted(sect.kinds[k]), f"{head} kind {k}: documented keys differ"


def test_the_documented_example_sweep_loads_and_validates(tmp_path):
    import re

    from lbsim import _lbsim
    from lbsim.experiments.spec import CLAIM_KINDS, FIGURE_KINDS

    blocks = re.findall(r"(?ms)^## Example$.*?^```toml\n(.*?)^```", DOC.read_text())
    assert len(blocks) == 1
    f = tmp_path / "example.toml"
    f.write_text(blocks[0])
    sw = load(f)
    assert sw.name == "example" and len(sw.points) == 4 and len({p.hash for p in sw.points}) == 4
    for pt in sw.points:
        _lbsim.validate(pt.text, [], str(tmp_path))
    quick = load(f, quick=True)
    assert len(quick.points) == 2 and quick.catalog_name == "example-quick"
    assert all(p.scenario["workload"]["flows"] == 100 for p in quick.points)
    assert {fig["kind"] for fig in sw.spec["figure"]} <= set(FIGURE_KINDS)
    assert {c.get("kind", "ratio") for c in sw.spec["claim"]} <= set(CLAIM_KINDS)


def test_an_unknown_or_misshapen_section_is_refused_naming_it(tmp_path):
    from lbsim.experiments.sweep import SweepError

    text = TINY.read_text()
    for bad, want in [
        (text + '\n[figures]\nid = "b"\n', "unknown section [figures]"),
        (text + "\n[rule]\nmatch = {}\nset = {}\n", "rule must be an array of tables: write [[rule]]"),
        (text.replace(NO_QUICK, "[[quick]]\n"), "quick must be a table: write [quick]"),
        ('title = "x"\n' + text, "unknown top-level key title"),
        (text.replace("[axes]", "[axis]"), "unknown section [axis]"),
        (text.split("[axes]")[0], "missing [axes]"),
    ]:
        f = tmp_path / "bad.toml"
        f.write_text(bad)
        with pytest.raises(SweepError) as e:
            load(f)
        msg = str(e.value)
        assert msg.startswith(f"{f}: ") and want in msg and "\n" not in msg, msg


def test_quick_without_a_quick_section_fails_naming_the_file(tmp_path):
    from lbsim.experiments.sweep import SweepError

    assert NO_QUICK in TINY.read_text()
    f = tmp_path / "noquick.toml"
    f.write_text(TINY.read_text().replace(NO_QUICK, ""))
    assert len(load(f).points) == 4
    with pytest.raises(SweepError) as e:
        load(f, quick=True)
    assert str(e.value) == f"{f}: --quick needs a [quick] section (this sweep has none)"
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", "sweep", str(f), "--quick", "--root", str(tmp_path / "results")],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and str(f) in p.stderr and "[quick]" in p.stderr, p.stderr
    assert not (tmp_path / "results").exists()
