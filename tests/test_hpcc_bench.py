"""The HPCC reference scripts (bench/hpcc): flow files, run summaries, time reports."""

import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(f"hpcc_{name}", ROOT / "bench" / "hpcc" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


flows = load("flows")
fct_stats = load("fct_stats")
hpcc_run = load("hpcc_run")


def star_topology(tmp_path, hosts=8):
    """One switch (id = hosts) with `hosts` hosts at 100 Gb/s."""
    lines = [f"{hosts + 1} 1 {hosts}", str(hosts)] + [f"{h} {hosts} 100Gbps 0.001ms 0" for h in range(hosts)]
    path = tmp_path / "topo.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_websearch_sampler_interpolates_between_points():
    cdf = flows.SizeCdf(flows.DEFAULT_CDF)
    assert cdf.mean() == pytest.approx(1_711_250)
    assert cdf.sample(0.0) == 1  # the zero-byte point never gives an empty flow
    assert cdf.sample(0.15) == 10_000
    assert cdf.sample(0.175) in (14_999, 15_000)  # truncated to whole bytes after float arithmetic
    assert cdf.sample(0.985) == 20_000_000


def test_flows_are_sorted_seeded_and_at_the_offered_load(tmp_path):
    hosts, rates = flows.read_topology(star_topology(tmp_path))
    assert hosts == list(range(8)) and set(rates.values()) == {100e9}
    cdf = flows.SizeCdf(flows.DEFAULT_CDF)
    a = flows.generate(hosts, 100e9, 0.5, 200_000_000, cdf, seed=3)
    assert a == flows.generate(hosts, 100e9, 0.5, 200_000_000, cdf, seed=3)
    assert a != flows.generate(hosts, 100e9, 0.5, 200_000_000, cdf, seed=4)
    assert [f[0] for f in a] == sorted(f[0] for f in a)
    assert all(2_000_000_000 < t <= 2_200_000_000 and src != dst for t, src, dst, _ in a)
    # 8 hosts x 200 ms / 273.8 us mean gap = 5,844 expected arrivals
    assert abs(len(a) - 5844) < 4 * 5844**0.5
    assert {src for _, src, _, _ in a} == set(hosts) == {dst for _, _, dst, _ in a}


def test_the_flow_file_has_the_simulators_layout(tmp_path, monkeypatch):
    out = tmp_path / "flows.txt"
    argv = ["flows.py", "--topo", str(star_topology(tmp_path)), "--load", "0.3", "--duration-ms", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    assert flows.main() == 0
    lines = out.read_text().splitlines()
    assert int(lines[0]) == len(lines) - 1 > 0
    src, dst, pg, dport, size, start = lines[1].split()
    assert (pg, dport) == ("3", "100") and int(size) >= 1 and len(start.split(".")[1]) == 9


def test_fct_stats_clamps_slowdown_and_finds_unfinished_flows(tmp_path):
    ip = {0: "0b000001", 1: "0b000101", 2: "0b000201"}
    fct = tmp_path / "fct.txt"
    fct.write_text(
        f"{ip[0]} {ip[1]} 10000 100 5000 2000000000 990 1000\n"  # slowdown 0.99, clamped to 1
        f"{ip[0]} {ip[1]} 10001 100 5000 2000000100 3000 1000\n"  # 3.0
        f"{ip[1]} {ip[2]} 10000 100 2000000 2000000200 40000 20000\n"  # 2.0
    )
    flow_file = tmp_path / "flows.txt"
    flow_file.write_text("4\n0 1 3 100 5000 2.0\n0 1 3 100 5000 2.0000001\n1 2 3 100 2000000 2.0000002\n0 1 3 100 70000 2.0000003\n")
    pfc = tmp_path / "pfc.txt"
    pfc.write_text("100 5 1 2 1\n150 5 1 2 1\n400 5 1 2 0\n500 0 0 1 1\n700 0 0 1 0\n800 6 1 3 1\n900 6 1 1 0\n")
    s = fct_stats.summarize(fct, pfc, flow_file)
    assert (s["flows"], s["completed"], s["incomplete"], s["incomplete_sizes"]) == (4, 3, 1, [70000])
    small = s["slowdown"][0]
    assert small["bucket"] == "<10KB" and small["count"] == 2
    assert small["median"] == 3.0  # index int(2 * 0.5) of [1.0, 3.0]
    assert small["mean"] == 2.0 and small["mean_unclamped"] == pytest.approx(1.995) and small["below_1"] == 0.5
    assert s["slowdown"][3]["count"] == 1 and s["slowdown"][4]["count"] == 3
    p = s["pfc"]
    assert p["switch"] == {"pause": 3, "resume": 2} and p["host"] == {"pause": 1, "resume": 1}
    # port (5, 2): 100..400; host port: 500..700; (6, 3) paused at its last frame: 0
    assert p["ports_paused"] == 4 and p["paused_port_time_ns"] == 500


def test_time_report_is_parsed():
    text = """\tCommand being timed: "third config.txt"
\tUser time (seconds): 493.77
\tSystem time (seconds): 0.47
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:08:14.94
\tMaximum resident set size (kbytes): 353376
\tExit status: 0
"""
    t = hpcc_run.parse_time_v(text)
    assert t["wall_s"] == 4094.94 and t["cpu_s"] == 494.24 and t["max_rss_kb"] == 353376 and t["exit_status"] == 0
