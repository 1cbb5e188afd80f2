"""End-to-end tests of the Python API and the CLI over the Rust core."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import lbsim

FEW = ["workload.flows=300"]


def cli(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"lbsim {' '.join(map(str, args))} failed:\n{p.stderr}")
    return p


def test_run_writes_flows_and_summary(tmp_path, small):
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=300", "--quiet")
    flows = pd.read_parquet(tmp_path / "o" / "flows.parquet")
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert len(flows) == 300
    assert summary["flows"]["total"] == 300
    assert summary["flows"]["completed"] + summary["flows"]["unfinished"] == 300
    assert summary["conservation"]["ok"] is True
    c = summary["conservation"]
    assert c["sent"] == c["delivered"] + c["dropped"] + c["in_flight"]
    # the load is stated against a named capacity
    assert summary["workload"]["load_of"] == "leaf_uplinks"
    assert summary["workload"]["capacity_gbps"] == pytest.approx(320.0)
    done = flows[flows.completed]
    assert (done.fct_us >= done.ideal_fct_us * 0.999).all(), "no flow beats the empty network"
    assert (tmp_path / "o" / "links.parquet").exists(), "small.toml samples L0's uplinks"


def test_same_seed_gives_byte_identical_flows(tmp_path, small):
    for d in ("a", "b"):
        cli("run", small, "--out", tmp_path / d, "--set", "workload.flows=300", "--quiet")
    a = (tmp_path / "a" / "flows.parquet").read_bytes()
    b = (tmp_path / "b" / "flows.parquet").read_bytes()
    assert a == b
    cli("run", small, "--out", tmp_path / "c", "--seed", "5", "--set", "workload.flows=300", "--quiet")
    assert (tmp_path / "c" / "flows.parquet").read_bytes() != a


def test_scheme_does_not_change_the_flow_list(tmp_path, small):
    cli("flows", small, "--out", tmp_path / "ecmp.csv", "--set", "workload.flows=300")
    cli("flows", small, "--out", tmp_path / "spray.csv", "--set", "workload.flows=300", "--set", "lb.scheme=spray")
    assert (tmp_path / "ecmp.csv").read_text() == (tmp_path / "spray.csv").read_text()
    df = pd.read_csv(tmp_path / "ecmp.csv")
    assert list(df.columns) == ["src", "dst", "size_bytes", "start_us"]
    assert len(df) == 300


def test_exported_flow_list_replays_identically(tmp_path, small):
    cli("flows", small, "--out", tmp_path / "f.csv", "--set", "workload.flows=200")
    gen = lbsim.run(small, set=["workload.flows=200"])
    rep = lbsim.run(small, set=["workload.kind=flow_list", f'workload.flow_list="{tmp_path / "f.csv"}"'])
    cols = ["src", "dst", "size_bytes", "start_us", "fct_us"]
    pd.testing.assert_frame_equal(gen.flows[cols], rep.flows[cols])
    assert gen.summary["conservation"]["ok"] is True and rep.summary["conservation"]["ok"] is True


@pytest.mark.parametrize(
    "override, field",
    [
        ("topology.host_rate_gbps=-10", "topology.host_rate_gbps"),
        ("workload.load=1.3", "workload.load"),
        ("transport.min_rto=5", "transport.min_rto"),
        ('failures=[{link="L1-S*"}]', "topology"),
        ("lb.scheme=nosuch", "lb.scheme"),
        ("topology.host_rate_gbps=1e-10", "topology.host_rate_gbps"),
        ("metrics.utilization_window_ms=1e-10", "metrics.utilization_window_ms"),
        ('topology.leaves="2"', "topology.leaves"),
        ("topology.leaves=100000", "topology.leaves"),
        ("workload.flows=1000000000", "workload.flows"),
    ],
)
def test_malformed_scenarios_fail_with_one_line_naming_the_field(small, override, field):
    p = cli("run", small, "--out", "/tmp/never", "--set", override, check=False)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    assert field in lines[0], lines[0]
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.run(small, set=[override])
    assert e.value.field.startswith(field)


@pytest.mark.parametrize(
    "override, field",
    [
        ("lb.scheme=cong", "lb.scheme"),
        ('failures=[{link="L9-S0"}]', "failures[0].link"),
        ("lb.params.zzz=1", "lb.params.zzz"),
        ('metrics.queue_samplers=["nowhere"]', "metrics.queue_samplers[0]"),
        ('workload.kind="flow_list"', "workload.flow_list"),
    ],
)
def test_validate_rejects_what_run_rejects(small, override, field):
    """`lbsim validate` goes as far as a run before its first event."""
    p = cli("validate", small, "--set", override, check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert field in p.stderr
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.validate(small, set=[override])
    assert e.value.field == field
    # picklable, so sweep workers can report it
    import pickle

    assert str(pickle.loads(pickle.dumps(e.value))) == str(e.value)


def test_a_scheme_duration_is_checked_in_the_unit_it_is_declared_in(small):
    for value, msg in [("-2", "must be a positive number of ms, got -2"), ("1e9", "1e9 ms is longer than the 1-day limit")]:
        with pytest.raises(lbsim.ScenarioError) as e:
            lbsim.validate(small, set=["lb.scheme=vms", f"lb.params.state_idle_ms={value}"])
        assert e.value.field == "lb.params.state_idle_ms" and msg in str(e.value), str(e.value)


def test_api_accepts_dict_scenarios_and_reports_progress():
    sc = {
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 8,
                     "host_rate_gbps": 10, "fabric_rate_gbps": 40},
        "workload": {"kind": "poisson", "load": 0.5, "flows": 3000},
    }
    calls = []
    res = lbsim.run(sc, progress=lambda p: calls.append(p) or True)
    assert res.summary["flows"]["total"] == 3000
    assert res.summary["conservation"]["ok"] is True
    assert res.flows.dtypes["fct_us"].kind == "f"
    assert set(res.ports.columns) >= {"port", "tx_bytes", "drops"}
    for p in calls:
        assert 0 <= p["flows_done"] <= p["flows_total"] == 3000


def test_progress_callback_can_stop_a_run(small):
    with pytest.raises(KeyboardInterrupt):
        lbsim.run(small, set=["workload.flows=20000"], progress=lambda p: False)


def test_schemes_lists_every_scheme_with_parameters():
    p = cli("schemes", "--json")
    sch = {s["name"]: s for s in json.loads(p.stdout)}
    assert {"ecmp", "spray"} <= set(sch)
    for s in sch.values():
        assert s["follows"] and s["summary"]
        for par in s["params"]:
            assert par["default"] != "" and par["help"]
    text = cli("schemes").stdout
    assert "mode" in text and "follows" in text


def test_b1_example_is_valid(examples):
    lbsim.validate(examples / "b1.toml")


@pytest.mark.parametrize("name", ["small", "b1", "clove_testbed", "conga_testbed", "fat_tree_dctcp", "explicit_asymmetric", "incast"])
def test_every_example_runs_and_conserves_packets(examples, name):
    sets = ["workload.flows=60"] if name != "incast" else ["workload.incast.requests=3"]
    res = lbsim.run(examples / f"{name}.toml", set=sets)
    assert res.summary["conservation"]["ok"] is True
    assert res.summary["flows"]["unfinished"] == 0


def test_ag_model_from_python_is_the_schemes_model():
    # docs/schemes/ag.md §1.4 (model table): M = 45, RTT_g = 250 us, RTT_b = 500 us
    table = {0: 1, 1: 6, 2: 8, 5: 15, 10: 22, 22: 22, 40: 11, 45: 1}
    for mb, g in table.items():
        assert lbsim.ag_optimal_granularity(45, mb, 250, 500) == g
    # where r is not unimodal the paper's bisection misses the argmax
    assert lbsim.ag_optimal_granularity(45, 20, 250, 300) == 15
    assert lbsim.ag_optimal_granularity(45, 20, 250, 300, search="bisect") == 9
    assert abs(lbsim.ag_rate_gbps(15, 45, 20, 250, 300) - 0.8507) < 1e-3
    with pytest.raises(ValueError, match="congested"):
        lbsim.ag_optimal_granularity(4, 5, 250, 300)
    with pytest.raises(ValueError, match="search"):
        lbsim.ag_optimal_granularity(4, 1, 250, 300, search="golden")
    # eq. (1), Fig. 7: two trains (gran 22 of W = 44) reorder iff the first
    # is on a congested path and the second is not; one train never does
    assert lbsim.ag_reorder_probability(22, 45, 1) == pytest.approx(1 / 45 * 44 / 45)
    assert lbsim.ag_reorder_probability(44, 45, 20) == 0.0
    with pytest.raises(ValueError, match="gran"):
        lbsim.ag_reorder_probability(0, 45, 1)


def test_every_generated_flow_is_in_the_flow_table_with_signed_counters():
    r = lbsim.run("examples/small.toml", set=["workload.flows=100", "run.stop_ms=3"])
    f, fl = r.flows, r.summary["flows"]
    assert len(f) == 100 == fl["total"]
    assert (~f.started).sum() == fl["not_started"] > 0
    assert fl["completed"] + fl["unfinished"] + fl["not_started"] == 100
    assert f[~f.started].fct_us.isna().all() and (f[~f.started].start_us > 3000).all()
    for col in ("retransmits", "timeouts", "out_of_order_segments", "out_of_order_after_loss", "reordered_segments", "duplicate_segments",
                "fast_recoveries_reordering", "fast_recoveries_loss", "fast_recoveries_other"):
        assert str(f[col].dtype) == "int64", col
    # not recorded without metrics.path_record: null, not 0
    assert f.path_changes.isna().all() and f.uplinks_used.isna().all()
    assert (f.retransmits - f.timeouts - 10**6).min() < 0  # no unsigned wrap-around


def test_flow_rates_add_up_to_each_flows_bytes(tmp_path):
    r = lbsim.run("examples/small.toml", set=["workload.flows=60", "metrics.flow_rate_window_ms=1"])
    fr, f = r.flow_rates, r.flows
    # at most the 10G host link, except a window where a repaired hole
    # releases buffered data at once
    assert len(fr) > 0 and fr.gbps.median() <= 10.0
    got = fr.groupby("flow_id").bytes.sum()
    done = f[f.completed].set_index("flow_id").size_bytes
    assert (got.reindex(done.index) == done).all(), "every completed flow's bytes, window by window"
    out = r.write(tmp_path / "run")
    assert (out / "flow_rates.parquet").exists()
    # a rerun without the metric into the same folder leaves no stale file
    lbsim.run("examples/small.toml", set=["workload.flows=20"]).write(tmp_path / "run")
    assert not (tmp_path / "run" / "flow_rates.parquet").exists()


def test_lbsim_plot_writes_figures_a_reader_can_open(tmp_path):
    from PIL import Image

    for scheme in ("ecmp", "conga"):
        subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(tmp_path / scheme), "--quiet",
                        "--set", "workload.flows=200", "--set", f'lb.scheme="{scheme}"', "--set", "metrics.flow_rate_window_ms=1"], check=True)
    r = subprocess.run([sys.executable, "-m", "lbsim.cli", "plot", str(tmp_path / "ecmp"), str(tmp_path / "conga"), "--out", str(tmp_path / "figs")],
                       capture_output=True, text=True, check=True)
    for name in ("fct_cdf", "slowdown_by_size", "link_utilisation", "flow_goodput"):
        with Image.open(tmp_path / "figs" / f"{name}.png") as im:
            assert im.size[0] > 300 and im.size[1] > 200, name
        assert name in r.stdout
    cdf = pd.read_csv(tmp_path / "figs" / "fct_cdf.csv")
    assert set(cdf.run) == {"ecmp", "conga"}
    bad = subprocess.run([sys.executable, "-m", "lbsim.cli", "plot", str(tmp_path), "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert bad.returncode == 2 and "no flows.parquet" in bad.stderr and "Traceback" not in bad.stderr


def test_the_resolved_scenario_beside_the_results_replays_the_run(tmp_path):
    a = tmp_path / "a"
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(a), "--quiet", "--seed", "3",
                    "--set", "workload.flows=150", "--set", 'lb.scheme="letflow"'], check=True)
    text = (a / "scenario.toml").read_text()
    assert 'scheme = "letflow"' in text and "seed = 3" in text and "flows = 150" in text
    b = tmp_path / "b"
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", str(a / "scenario.toml"), "--out", str(b), "--quiet"], check=True)
    assert (a / "flows.parquet").read_bytes() == (b / "flows.parquet").read_bytes()


def test_a_pcap_of_a_link_opens_with_a_pcap_library_and_counts_its_packets(tmp_path):
    dpkt = pytest.importorskip("dpkt")
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(out), "--quiet",
                    "--set", "workload.flows=100", "--set", 'metrics.pcap_ports=["L0->S0#0"]'], check=True)
    tx = pd.read_parquet(out / "ports.parquet").set_index("port").tx_pkts["L0->S0#0"]
    with open(out / "L0-S0_0.pcap", "rb") as f:
        pkts = list(dpkt.pcap.Reader(f))
    assert abs(len(pkts) - tx) <= 5, (len(pkts), tx)  # admitted vs transmitted by the end
    ts = [t for t, _ in pkts]
    assert ts == sorted(ts) and ts[0] >= 0
    tcp = [dpkt.ethernet.Ethernet(b).data for _, b in pkts]
    ip = next(p for p in tcp if isinstance(p, dpkt.ip.IP) and len(bytes(p.data)) >= 20)
    assert ip.p == 6 and ip.src[0] == 10 and ip.len <= 1500
    # Clove encapsulates: outer UDP to 4789 (VXLAN)
    enc = tmp_path / "clove"
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(enc), "--quiet",
                    "--set", "workload.flows=50", "--set", 'lb.scheme="clove_ecn"', "--set", 'metrics.pcap_ports=["L0->S0#0"]'], check=True)
    with open(enc / "L0-S0_0.pcap", "rb") as f:
        first = dpkt.ethernet.Ethernet(next(iter(dpkt.pcap.Reader(f)))[1])
    assert first.data.p == 17 and first.data.data.dport == 4789


def test_the_run_summary_says_what_conservation_counts_as_dropped(tmp_path, small):
    # Clove-ECN's traceroute probes expire by design: "dropped" in the
    # conservation line counts them, "drops" does not, and the line says so
    p = cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=100", "--set", "lb.scheme=clove_ecn")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    d, expired, c = s["network"]["drops"]["total"], s["network"]["probe_ttl_expiries"], s["conservation"]
    assert expired > 0 and c["dropped"] == d + expired
    assert f"drops {d} " in p.stdout
    assert f"dropped {c['dropped']} ({d} drops + {expired} probe TTL expiries) + in flight" in p.stdout
    # without probes the line has no aside
    p = cli("run", small, "--out", tmp_path / "e", "--set", "workload.flows=100")
    line = next(x for x in p.stdout.splitlines() if x.startswith("conservation"))
    assert "probe TTL" not in line and "(" not in line, line


def test_a_bare_word_override_is_a_string_in_the_written_scenario(tmp_path, small):
    # the Rust side reads `--set lb.scheme=letflow` as the string "letflow";
    # the scenario.toml written beside the results must agree, not crash
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=50", "--set", "lb.scheme=letflow", "--quiet")
    import tomllib

    sc = tomllib.loads((tmp_path / "o" / "scenario.toml").read_text())
    assert sc["lb"]["scheme"] == "letflow"
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["scheme"]["name"] == "letflow"


def test_a_class_mixture_labels_every_flow_by_name(tmp_path, small):
    mix = ('workload.classes=[{name="mice", fraction=0.9, pareto={shape=1.5, mean_bytes=20000}},'
           ' {name="elephants", fraction=0.1, size_bytes=2000000}]')
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=400", "--set", mix, "--quiet")
    flows = pd.read_parquet(tmp_path / "o" / "flows.parquet")
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert set(flows["class"]) == {"mice", "elephants"}
    assert (flows[flows["class"] == "elephants"].size_bytes == 2_000_000).all()
    assert (flows[flows["class"] == "mice"].size_bytes >= 6666).all()
    per = {c["class"]: c["flows"] for c in summary["classes"]}
    assert per == flows["class"].value_counts().to_dict()
    # without classes every flow is "all"
    cli("run", small, "--out", tmp_path / "p", "--set", "workload.flows=50", "--quiet")
    assert set(pd.read_parquet(tmp_path / "p" / "flows.parquet")["class"]) == {"all"}


def test_cwnd_samples_and_extra_percentiles_reach_the_files(tmp_path, small):
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=100", "--set", "metrics.cwnd_sample_interval_us=50",
        "--set", "metrics.percentiles=[99.9, 99.99]", "--quiet")
    cw = pd.read_parquet(tmp_path / "o" / "cwnd.parquet")
    assert list(cw.columns) == ["t_us", "flow_id", "conn", "cwnd_bytes", "ssthresh_bytes"]
    assert cw.flow_id.between(0, 99).all() and (cw.cwnd_bytes >= 1448).all()
    assert ((cw.ssthresh_bytes == -1) | (cw.ssthresh_bytes >= 2 * 1448)).all()
    assert cw.t_us.is_monotonic_increasing
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["fct_us"]["p99"] <= s["fct_us"]["p99_9"] <= s["fct_us"]["p99_99"] <= s["fct_us"]["max"]
    # off by default: no stale file from the first run
    cli("run", small, "--out", tmp_path / "o", "--set", "workload.flows=20", "--quiet")
    assert not (tmp_path / "o" / "cwnd.parquet").exists()


def _rdma_run(out: str) -> None:
    lbsim.run("examples/rdma_dcqcn.toml", set=["workload.flows=200", "lb.scheme=drill"]).write(out)


def test_rdma_outputs_are_identical_across_repeats_and_worker_processes(tmp_path):
    # the lossless fabric's dequeue events, PFC and DCQCN timers, in this
    # process and in two worker processes at once: byte-identical outputs
    from concurrent.futures import ProcessPoolExecutor

    _rdma_run(str(tmp_path / "here"))
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_rdma_run, [str(tmp_path / "w1"), str(tmp_path / "w2")]))
    for name in ("flows.parquet", "fct.txt"):
        ref = (tmp_path / "here" / name).read_bytes()
        assert len(ref) > 1000
        assert (tmp_path / "w1" / name).read_bytes() == ref
        assert (tmp_path / "w2" / name).read_bytes() == ref
