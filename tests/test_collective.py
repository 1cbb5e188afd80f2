"""Collective jobs end to end through the CLI and the Python API: bad job
specs fail with one line naming the key; a run writes jobs.parquet and
steps.parquet whose numbers agree with flows.parquet and summary.json."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import lbsim
from lbsim.stats import nearest_rank


def cli(*args):
    return subprocess.run([sys.executable, "-m", "lbsim.cli", *map(str, args)], capture_output=True, text=True)


@pytest.fixture
def allreduce(examples):
    return examples / "allreduce_leafspine.toml"


@pytest.mark.parametrize(
    "jobs, field, words",
    [
        ("[{ranks=[0, 300], size_bytes=1000}]", "jobs[0].ranks", "host 300 does not exist (the fabric has 16 hosts)"),
        ("[{ranks=1, size_bytes=1000}]", "jobs[0].ranks", "at least 2 ranks"),
        ("[{ranks=4, size_bytes=0}]", "jobs[0].size_bytes", "must be >= 1"),
        ("[{ranks=20, placement=\"spread\", size_bytes=1000}]", "jobs[0].ranks", "20 ranks do not fit"),
    ],
)
def test_bad_job_specs_fail_with_one_line_naming_the_key(allreduce, jobs, field, words):
    p = cli("validate", allreduce, "--set", f"jobs={jobs}")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert field in lines[0] and words in lines[0] and "Traceback" not in p.stderr
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.validate(allreduce, set=[f"jobs={jobs}"])
    assert e.value.field == field


def test_run_writes_jobs_and_steps_consistent_with_flows(tmp_path, allreduce):
    jobs = "jobs=[{ranks=4, placement=\"spread\", size_bytes=4000000, iterations=3, channels=2}]"
    p = cli("run", allreduce, "--out", tmp_path / "o", "--set", jobs, "--quiet")
    assert p.returncode == 0, p.stderr
    d = tmp_path / "o"
    jb, st, fl = (pd.read_parquet(d / f"{t}.parquet") for t in ("jobs", "steps", "flows"))
    summary = json.loads((d / "summary.json").read_text())
    assert len(jb) == 3 and jb.completed.all()
    assert len(st) == 3 * 2 * (4 - 1) and (st.flows == 8).all()
    # an iteration ends with its last flow; busbw = size / time x 2(n-1)/n
    mine = fl[fl.job == 0]
    last = mine.groupby("job_iteration").finish_us.max()
    assert (abs(jb.set_index("iteration").end_us - last) < 1e-6).all()
    busbw = 4_000_000 * 8 / (jb.time_us * 1e-6) / 1e9 * 1.5
    assert (abs(jb.busbw_gbps - busbw) < 1e-9 * busbw).all()
    # the slowest flow of a step is a flow of that step with the largest FCT
    for s in st.itertuples():
        f = mine[(mine.job_iteration == s.iteration) & (mine.job_step == s.step)]
        assert s.slowest_fct_us == pytest.approx(f.fct_us.max())
        assert f.set_index("flow_id").fct_us[s.slowest_flow_id] == pytest.approx(f.fct_us.max())
    js = summary["jobs"][0]
    assert js["iteration_us"]["p99"] == pytest.approx(nearest_rank(jb.time_us.to_numpy(), 0.99))
    assert js["iteration_us"]["mean"] == pytest.approx(jb.time_us.mean())
    r = lbsim.run(allreduce, set=[jobs])
    assert r.jobs.time_us.tolist() == jb.time_us.tolist()
    assert r.steps.end_us.tolist() == st.end_us.tolist()


def test_the_run_summary_on_the_terminal_gives_each_jobs_busbw(tmp_path, allreduce):
    jobs = "jobs=[{name=\"ar\", ranks=4, placement=\"spread\", size_bytes=4194304, iterations=2}]"
    p = cli("run", allreduce, "--out", tmp_path / "o", "--set", jobs)
    assert p.returncode == 0, p.stderr
    j = json.loads((tmp_path / "o" / "summary.json").read_text())["jobs"][0]
    line = next(x for x in p.stdout.splitlines() if x.startswith("job ar "))
    assert line.startswith("job ar (all_reduce, 4 ranks, 4 MiB): 2/2 iterations, mean ")
    assert f"busbw mean {j['busbw_gbps']['mean']:.2f} Gb/s ({j['busbw_over_ideal']:.2f} of the ideal" in line
