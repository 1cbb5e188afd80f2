"""Bad input never crashes, hangs or lies: unreadable files and unwritable
outputs fail with one line naming them, before any simulation; a killed
sweep leaves no worker behind; an unreachable Ray cluster fails in seconds;
a sweep reruns the points whose input files changed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lbsim
from lbsim import _api, cli
from lbsim.experiments.sweep import load, run_sweep

HERE = Path(__file__).parent
PKG = Path(lbsim.__file__).resolve().parents[1]  # the lbsim under test, for subprocesses
ENV = {**os.environ, "PYTHONPATH": str(PKG) + os.pathsep + os.environ.get("PYTHONPATH", "")}

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def fail_line(capsys, argv: list[str]) -> tuple[int, str]:
    """Runs the CLI in-process; returns (exit code, stderr), which must be
    one line (an uncaught exception fails the test)."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return e.value.code, err


def bad_file(tmp_path: Path, kind: str, monkeypatch) -> Path:
    p = tmp_path / f"{kind}.toml"
    if kind == "binary":
        p.write_bytes(PNG)
    elif kind == "utf16":
        p.write_text('name = "x"\nseed = 1\n', encoding="utf-16")
    elif kind == "folder":
        p.mkdir()
    elif kind == "unreadable":
        p.write_text('name = "x"\n')
        p.chmod(0)
        if os.access(p, os.R_OK):  # root reads anything: make it fail as it would
            real = Path.read_bytes

            def denied(self):
                if self == p:
                    raise PermissionError(13, "Permission denied", str(self))
                return real(self)

            monkeypatch.setattr(Path, "read_bytes", denied)
    return p


@pytest.mark.parametrize("kind", ["binary", "utf16", "folder", "unreadable", "missing"])
@pytest.mark.parametrize("cmd", ["run", "validate", "flows", "sweep"])
def test_unreadable_scenario_or_sweep_file_fails_with_one_line_naming_it(tmp_path, capsys, monkeypatch, cmd, kind):
    p = bad_file(tmp_path, kind, monkeypatch)
    argv = {"run": ["run", str(p), "--out", str(tmp_path / "out")],
            "validate": ["validate", str(p)],
            "flows": ["flows", str(p), "--out", str(tmp_path / "f.csv")],
            "sweep": ["sweep", str(p), "--root", str(tmp_path / "results")]}[cmd]
    code, err = fail_line(capsys, argv)
    assert code == 2
    assert str(p) in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_api_names_a_binary_scenario_file(tmp_path):
    p = tmp_path / "image.toml"
    p.write_bytes(PNG)
    with pytest.raises(lbsim.ScenarioError, match="image.toml"):
        lbsim.validate(p)


def test_run_checks_the_output_folder_before_simulating(tmp_path, capsys, monkeypatch, small):
    def no_run(*a, **k):
        raise AssertionError("the simulation ran before the output was checked")

    monkeypatch.setattr(_api, "run", no_run)
    monkeypatch.setattr(_api, "flows_csv", no_run)
    existing = tmp_path / "file"
    existing.write_text("x")
    for out in (existing, existing / "sub"):
        code, err = fail_line(capsys, ["run", str(small), "--out", str(out), "--quiet"])
        assert code == 2 and f"--out {out}" in err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    if os.access(locked, os.W_OK):  # root writes anywhere but in /proc
        locked = Path("/proc")
    code, err = fail_line(capsys, ["run", str(small), "--out", str(locked / "out"), "--quiet"])
    assert code == 2 and "--out" in err and str(locked) in err
    code, err = fail_line(capsys, ["flows", str(small), "--out", str(tmp_path)])
    assert code == 2 and "is a folder" in err
    code, err = fail_line(capsys, ["flows", str(small), "--out", str(tmp_path / "no" / "f.csv")])
    assert code == 2 and "does not exist" in err


def test_version_prints_package_version_and_model_revision(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert lbsim.__version__ in out
    assert lbsim._lbsim.__model_revision__ in out


# ------------------------------------------------------------------ sweeps

SLOW = """
[experiment]
name = "slow"
title = "runs of a few seconds, so that the workers are alive"

[base]
seed = 1
[base.topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 8
host_rate_gbps = 10
fabric_rate_gbps = 40
[base.workload]
kind = "poisson"
cdf = "websearch"
load = 0.6
flows = 3000

[axes]
seed = [1, 2, 3, 4]

[keys]
seed = "seed"
"""


def children(pid: int) -> set[int]:
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie is dead, only not yet reaped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_a_sweep_leaves_no_worker_and_no_half_run(tmp_path, sig):
    f = tmp_path / "slow.toml"
    f.write_text(SLOW)
    root = tmp_path / "results"
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as errf:  # not a pipe: a surviving worker would hold it open
        p = subprocess.Popen([sys.executable, "-m", "lbsim.cli", "sweep", str(f), "--workers", "2", "--root", str(root)],
                             env=ENV, stdout=subprocess.DEVNULL, stderr=errf)
    workers: set[int] = set()
    try:
        deadline = time.time() + 30
        while len(workers) < 2 and time.time() < deadline and p.poll() is None:
            workers = children(p.pid)
            time.sleep(0.05)
        assert len(workers) >= 2, "the sweep started its workers"
        time.sleep(0.5)  # into the runs
        os.kill(p.pid, sig)
        assert p.wait(timeout=10) != 0
        err = stderr.read_text()
        if sig == signal.SIGTERM:
            assert err.strip().splitlines()[-1:] == ["lbsim: error: terminated (SIGTERM)"], err
        deadline = time.time() + 10
        while any(alive(w) for w in workers) and time.time() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if alive(w)], "no worker survives the sweep"
    finally:
        for w in workers | {p.pid}:
            if alive(w):
                os.kill(w, signal.SIGKILL)
        p.wait()
    runs = root / "slow" / "runs"
    for d in runs.iterdir():
        assert ".tmp-" in d.name or (d / "summary.json").exists(), f"{d.name} is a half-written run"
    if sig == signal.SIGTERM:
        assert not [d for d in runs.iterdir() if ".tmp-" in d.name], "SIGTERM removes partial runs"


def test_an_unreachable_ray_cluster_fails_in_seconds(tmp_path):
    import socket

    pytest.importorskip("ray")

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "lbsim.cli", "sweep", str(HERE / "data" / "tiny_sweep.toml"),
                        "--ray", f"127.0.0.1:{port}", "--root", str(tmp_path)],
                       env=ENV, capture_output=True, text=True, timeout=60)
    assert time.time() - t0 < 30
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and f"--ray 127.0.0.1:{port}" in r.stderr, r.stderr
    assert not (tmp_path / "tiny" / "runs").exists() or not list((tmp_path / "tiny" / "runs").iterdir())


FLOW_SWEEP = """
[experiment]
name = "replay"
title = "a sweep replaying a flow list"

[base]
seed = 1
[base.topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
[base.workload]
kind = "flow_list"
flow_list = "data/flows.csv"

[axes]
scheme = ["ecmp", "spray"]

[keys]
scheme = "lb.scheme"
"""


def test_editing_a_referenced_flow_list_changes_the_point_hashes(tmp_path, monkeypatch):
    exp = tmp_path / "exp"
    (exp / "data").mkdir(parents=True)
    csv = exp / "data" / "flows.csv"
    csv.write_text("src,dst,size_bytes,start_us\n0,2,20000,0\n1,3,30000,5\n")
    f = exp / "replay.toml"
    f.write_text(FLOW_SWEEP)
    monkeypatch.chdir(tmp_path)  # relative paths are from the sweep file's folder
    sw = load(f)
    cat = run_sweep(sw, tmp_path / "results", workers=1, quiet=True)
    assert len(list((cat / "runs").iterdir())) == 2
    assert [p.hash for p in load(f).points] == [p.hash for p in sw.points]
    csv.write_text("src,dst,size_bytes,start_us\n0,2,20000,0\n1,3,31000,5\n")
    edited = load(f)
    assert not {p.hash for p in edited.points} & {p.hash for p in sw.points}
    # and a CDF file
    (exp / "data" / "sizes.cdf").write_text("1000 0.0\n100000 1.0\n")
    f.write_text(FLOW_SWEEP.replace('kind = "flow_list"\nflow_list = "data/flows.csv"',
                                    'kind = "poisson"\ncdf_file = "data/sizes.cdf"\nflows = 10\nload = 0.3'))
    before = [p.hash for p in load(f).points]
    (exp / "data" / "sizes.cdf").write_text("1000 0.0\n200000 1.0\n")
    assert not set(before) & {p.hash for p in load(f).points}
