"""lbsim validate explains a scenario; provenance; refusals of work that
cannot finish; the run's console."""

import json
import re
import subprocess
import sys
import time
import tomllib

import pytest

import lbsim

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def cli(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"lbsim {' '.join(map(str, args))} failed:\n{p.stderr}")
    return p


def ag_base_at(load: float) -> dict:
    """experiments/ag_fig10_11.toml's [base] at `load`, as its sweep builds it:
    [keys] load -> workload.load, plus the rule for that load."""
    d = tomllib.loads((ROOT / "experiments" / "ag_fig10_11.toml").read_text())
    sc = d["base"]
    sc["workload"][d["keys"]["load"].split(".")[1]] = load
    sc["workload"]["cdf"] = "websearch"
    for r in d["rule"]:
        if r["match"] == {"load": load}:
            for k, v in r["set"].items():
                a, b = k.split(".")
                sc[a][b] = v
    return sc


def test_summary_carries_provenance_with_commit_and_command_line(tmp_path, small):
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=50", "--quiet")
    p = json.loads((tmp_path / "o" / "summary.json").read_text())["provenance"]
    assert p["git_commit"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}", p["git_commit"])
    assert p["command_line"].startswith("lbsim run ") and "workload.flows=50" in p["command_line"]
    assert p["package_version"] == lbsim.__version__ and p["model_revision"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["started_utc"])
    assert p["host"] and p["cpu_model"]
    r = lbsim.run(small, seed=3, set=["workload.flows=20"])
    assert r.summary["provenance"]["command_line"] == f"lbsim.run({str(small)!r}, seed=3, set=['workload.flows=20'])"
    v = cli("--version").stdout
    assert p["git_commit"] in v and "model revision" in v


def test_validate_names_an_overloaded_leaf_and_the_ag_fig10_11_sweep_has_none(tmp_path):
    import tomli_w

    # the sweep offers the fullest leaf (L0) its swept load: no rack is
    # offered more than its uplinks at any load
    for load in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        assert lbsim.explain(ag_base_at(load))["overloaded"] == [], load
    # read as the mean leaf's load instead, 0.8 overloads L0 (58 hosts)
    sc = ag_base_at(0.8)
    sc["workload"]["load"] = 0.8
    f = tmp_path / "ag08.toml"
    f.write_text(tomli_w.dumps(sc))
    p = cli("validate", f)
    assert re.search(r"warning: offered load exceeds capacity at L0 \(1\.\d+x its uplinks", p.stdout), p.stdout
    e = json.loads(cli("validate", f, "--json").stdout)
    assert [o.split()[0] for o in e["overloaded"]] == ["L0"]
    assert e["topology"]["hosts"] == 256 and e["topology"]["switches"] == 16
    assert e["workload"]["capacity_gbps"] == pytest.approx(64.0)


def test_validate_estimates_b1_wall_time_within_2x_of_the_measured_run(examples):
    # measured 2026-12: release lbsim-run examples/b1.toml, 3.31 s (23.9 M events)
    e = lbsim.validate(examples / "b1.toml")["estimate"]
    assert 3.31 / 2 <= e["wall_s"] <= 3.31 * 2
    p = cli("validate", examples / "b1.toml")
    assert "estimate:" in p.stdout and "of wall time" in p.stdout and "peak memory" in p.stdout


def test_min_rto_at_the_delayed_ack_timeout_is_warned(small):
    e = lbsim.explain(small, set=["transport.min_rto_ms=1", "workload.flows=20"])
    assert any(w["key"] == "transport.min_rto_ms" for w in e["warnings"])


@pytest.mark.parametrize(
    "sets,key",
    [
        (["workload.size_bytes=1000000000000000"], "workload.size_bytes"),
        (["workload.kind=none", "udp=[{src=0,dst=20,rate_gbps=1000,stop_ms=8e7}]", "run.stop_ms=8e7"], "udp[0].rate_gbps"),
        (["network.host_jitter_ns=1e12"], "network.host_jitter_ns"),
        (["run.stop_ms=1e-9"], "run.stop_ms"),
    ],
)
def test_work_that_cannot_finish_is_refused_in_one_line_naming_the_key(small, sets, key):
    args = [a for s in sets for a in ("--set", s)]
    p = cli("validate", small, *args, check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and f"`{key}`" in p.stderr, p.stderr
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.run(small, set=sets)
    assert e.value.field == key


def test_incast_of_4294967295_requests_is_warned_and_refused_when_long(examples):
    e = lbsim.explain(examples / "incast.toml", set=["workload.incast.requests=4294967295"])
    assert any(w["key"] == "workload.incast.requests" for w in e["warnings"])
    sets = ["workload.incast.requests=4294967295", "run.stop_ms=8e7", "topology.host_rate_gbps=100"]
    with pytest.raises(lbsim.ScenarioError) as err:
        lbsim.validate(examples / "incast.toml", set=sets)
    assert err.value.field == "workload.incast.requests" and "--allow-long" in str(err.value)
    assert lbsim.validate(examples / "incast.toml", set=sets, allow_long=True)["estimate"]["wall_s"] > 86400


LONG_INCAST = ["workload.incast.requests=4294967295"]  # ~37 min estimated, stopped by run.stop_ms


def test_a_run_estimated_above_ten_minutes_warns_before_its_first_event_naming_the_key(tmp_path, examples):
    args = [sys.executable, "-m", "lbsim.cli", "run", str(examples / "incast.toml"), "--out", str(tmp_path / "o"), "--set", LONG_INCAST[0]]

    def first_lines(extra):
        # the warning, then the header, both before the first event; the
        # run itself is not waited for
        with subprocess.Popen(args + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
            try:
                header = [p.stdout.readline() for _ in range(4)]
            finally:
                p.kill()
            return p.stderr.read(), header

    err, header = first_lines([])
    warn = [x for x in err.splitlines() if x.startswith("lbsim: warning:")]
    assert len(warn) == 1 and warn[0].startswith("lbsim: warning: workload.incast.requests: this run is estimated at ~"), err
    assert "--allow-long" in warn[0] and header[0].startswith("topology "), header
    err, header = first_lines(["--allow-long"])
    assert header[3].startswith("estimate:") and "lbsim: warning:" not in err, (header, err)
    # validate says it too, in the same words
    p = cli("validate", examples / "incast.toml", "--set", LONG_INCAST[0])
    assert p.stderr.strip() == warn[0], p.stderr
    assert "lbsim: warning" not in cli("validate", examples / "incast.toml", "--set", LONG_INCAST[0], "--allow-long").stderr


def test_the_api_gives_a_long_run_warning_unless_allowed(examples):
    stop = {"progress": lambda p: False}  # stops at the first progress report
    with pytest.warns(lbsim.LongRunWarning, match=r"^workload\.incast\.requests: "), pytest.raises(KeyboardInterrupt):
        lbsim.run(examples / "incast.toml", set=LONG_INCAST, **stop)
    with pytest.raises(KeyboardInterrupt):  # warnings are errors in this suite: none is given
        lbsim.run(examples / "incast.toml", set=LONG_INCAST, allow_long=True, **stop)
    seen = []

    def on_start(e):  # sees it instead, and stops the run before its first event
        seen.append(e["long_run"])
        return False

    with pytest.raises(KeyboardInterrupt):
        lbsim.run(examples / "incast.toml", set=LONG_INCAST, on_start=on_start)
    assert seen[0]["key"] == "workload.incast.requests"


def test_a_udp_source_above_its_hosts_link_is_warned_naming_the_key_and_the_link(tmp_path, small):
    udp = "udp=[{src=1,dst=20,rate_gbps=1000}]"
    w = [x for x in lbsim.explain(small, set=[udp])["warnings"] if x["key"] == "udp[0].rate_gbps"]
    assert len(w) == 1 and "H1->L0#0 (10 Gb/s)" in w[0]["message"], w
    p = cli("run", small, "--out", tmp_path / "o", "--set", udp, "--set", "workload.flows=200", "--set", "run.stop_ms=20")
    header = p.stdout.split("\nscenario ")[0]  # what is printed before the first event
    assert re.search(r"^warning: udp\[0\]\.rate_gbps \(1000 Gb/s\) is above the link of its source, host 1, H1->L0#0 ", header, re.M), header
    # host 1's flows are left behind it: the warning after the run (also
    # with --quiet) names the source rather than the stop time
    f = json.loads((tmp_path / "o" / "summary.json").read_text())["flows"]
    assert f["unfinished"] > 0 and f["warning_key"] == "udp[0].rate_gbps", f
    end = [x for x in p.stderr.splitlines() if x.startswith("lbsim: warning:")]
    assert len(end) == 1 and "H1->L0#0" in end[0] and end[0].endswith("see udp[0].rate_gbps"), p.stderr


def test_a_hundred_thousand_explicit_links_run_in_seconds(tmp_path):
    # issue 51: such a topology ran past 20 s, most of it re-reading the
    # scenario in Python to write scenario.toml; the bound is the issue's
    lines = ['[topology]\nkind = "explicit"']
    for n, host in (("h0", True), ("h1", True), ("s0", False), ("s1", False)):
        lines.append(f'[[topology.nodes]]\nname = "{n}"\nhost = {str(host).lower()}')
    ends = [("h0", "s0"), ("h1", "s1")] + [("s0", "s1")] * 99_998
    lines += [f'[[topology.links]]\na = "{a}"\nb = "{b}"\nrate_gbps = 10' for a, b in ends]
    lines.append('[workload]\nkind = "poisson"\nflows = 20\nload_of = "host_links"\nload = 0.5')
    f = tmp_path / "wide.toml"
    f.write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    p = cli("run", f, "--out", tmp_path / "o", "--set", "workload.flows=10")
    took = time.perf_counter() - t0
    assert p.stdout.startswith("topology explicit: 2 hosts, 2 switches, 100000 links"), p.stdout[:200]
    assert took < 60, took
    written = tomllib.loads((tmp_path / "o" / "scenario.toml").read_text())
    assert len(written["topology"]["links"]) == 100_000 and written["workload"]["flows"] == 10


def test_a_flow_list_start_beyond_a_day_is_refused(tmp_path, small):
    (tmp_path / "f.csv").write_text("src,dst,size_bytes,start_us\n0,20,1000,0\n1,21,1000,1e30\n")
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.validate(small, set=["workload.kind=flow_list", f"workload.flow_list='{tmp_path / 'f.csv'}'"])
    assert e.value.field == "workload.flow_list"


def test_unfinished_flows_warn_in_one_line_and_strict_exits_3(tmp_path, small):
    args = ["run", small, "--out", tmp_path / "o", "--set", "workload.flows=300", "--set", "run.stop_ms=5", "--quiet"]
    p = cli(*args)
    warn = [l for l in p.stderr.splitlines() if "warning" in l]
    assert len(warn) == 1 and "run.stop_ms" in warn[0], p.stderr
    assert cli(*args, "--strict", check=False).returncode == 3


def test_out_folder_rules_and_the_wrote_line_lists_every_file(tmp_path, small):
    d = tmp_path / "x"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    p = cli("run", small, "--out", d, "--set", "workload.flows=100", check=False)
    assert p.returncode == 2 and "--force" in p.stderr and (d / "notes.txt").exists()
    p = cli("run", small, "--out", d, "--set", "workload.flows=100", "--force")
    wrote = [l for l in p.stdout.splitlines() if l.startswith("wrote ")][0]
    for f in ("flows.parquet", "summary.json", "ports.parquet", "links.parquet", "scenario.toml"):
        assert f"{d}/{f}" in wrote
    assert "\r" not in p.stderr  # no progress bar without a terminal
    p = cli("run", small, "--out", d, "--set", "workload.flows=100")
    assert "replacing the earlier run" in p.stderr
