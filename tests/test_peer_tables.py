"""The peer comparisons in README.md and docs/ are written from the records
under bench/results/ (tools/peer_tables.py) and must match the latest
record; every record says when, on what and how it was measured."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT / "tools" / "peer_tables.py"
spec = importlib.util.spec_from_file_location("peer_tables", GEN)
peer_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer_tables)


def test_committed_peer_tables_are_current():
    p = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_every_block_is_quoted_somewhere():
    text = "".join(f.read_text() for f in peer_tables.FILES)
    for name in peer_tables.BLOCKS:
        assert f"<!-- peer-table {name} -->" in text, name


#: Records written before every record kept the machine's core count.
WITHOUT_CORES = {"rdma_vs_hpcc_2026-12-02.json", "rdma_cost_vs_tcp_hpcc_2026-12-02.json"}
#: Records of the reference alone written before they kept this repository's commit.
WITHOUT_COMMIT = {"hpcc_reference_2026-12-02.json"}
RDMA_RECORDS = ["rdma_vs_hpcc_*.json", "rdma_cost_vs_tcp_hpcc_*.json", "rdma_pfc_incast_vs_hpcc_*.json", "hpcc_reference_*.json"]


def test_every_quoted_record_says_when_and_how():
    results = ROOT / "bench" / "results"
    b1 = sorted(results.glob("b1_vs_ns3_*.json"))
    htsim = sorted(results.glob("htsim_*.json"))
    scale = sorted(results.glob("scale_*.json"))
    rdma = {pattern: sorted(results.glob(pattern)) for pattern in RDMA_RECORDS}
    assert b1 and htsim and scale, "README.md quotes a B1, an htsim and a scale record"
    assert all(rdma.values()), f"README.md and docs/rdma.md quote each of {RDMA_RECORDS}"
    for path in b1 + htsim + scale + [p for ps in rdma.values() for p in ps]:
        rec = json.loads(path.read_text())
        # rdma_vs_hpcc keeps the date, commit and machine per run
        for when in [rec] if "date" in rec or "runs" not in rec else rec["runs"].values():
            assert re.fullmatch(r"\d{4}-\d\d-\d\d", when["date"]), f"{path.name}: an ISO date"
            if path.name not in WITHOUT_COMMIT:
                assert re.fullmatch(r"[0-9a-f]{40}", when["commit"]), f"{path.name}: a full commit hash"
            assert when["machine"]["cpu"], f"{path.name}: the machine"
            if path.name not in WITHOUT_CORES:
                assert when["machine"]["cores"], f"{path.name}: the machine's core count"
        command = rec.get("command") or rec.get("reproduce")
        assert re.match(r"(python3 |bash )?bench/\S+", command), f"{path.name}: the command that wrote it"
    for path in b1:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", json.loads(path.read_text())["ns3"]["date"]), f"{path.name}: ns-3's run date"
    for path in htsim:
        assert re.fullmatch(r"[0-9a-f]{40}", json.loads(path.read_text())["htsim"]["commit"] or ""), f"{path.name}: htsim's commit"
    for path in [p for ps in rdma.values() for p in ps]:
        assert re.fullmatch(r"[0-9a-f]{40}", peer_tables._hpcc_commit(json.loads(path.read_text()))), f"{path.name}: HPCC's commit"


def test_the_records_without_cores_or_commit_are_only_the_old_ones():
    results = ROOT / "bench" / "results"
    for name in WITHOUT_CORES | WITHOUT_COMMIT:
        assert (results / name).exists(), f"{name} is gone: drop it from the list"
        assert name.rsplit("_", 1)[1] <= "2026-12-02.json", "a new record says its cores and commit"


def record(date, mean_lbsim, wall_ns3=900.0):
    side = {"wall_run_s": 4.0, "wall_total_s": 5.0, "peak_rss_mb": 130.0, "mean_fct_ms": mean_lbsim, "p99_fct_ms": 60.0,
            "mean_lt100KB_ms": 1.0, "mean_gt10MB_ms": 60.0, "drops": 100_000, "retransmits": 110_000, "timeouts": 300,
            "fast_recoveries": 4_000, "events": 25_000_000, "events_per_s": 6_000_000}
    ns = {**side, "wall_run_s": wall_ns3, "wall_total_s": wall_ns3 + 20, "peak_rss_mb": 900.0, "mean_fct_ms": 5.0,
          "version": "3.44.post0", "date": date}
    return {"date": date, "commit": "a" * 40, "model_revision": "r1", "machine": {"cores": 2, "cpu": "CPU"},
            "command": "python3 bench/b1_compare.py --flows 5000", "flows": 5000, "lbsim": side, "ns3": ns}


def test_the_latest_record_is_quoted_with_its_date(tmp_path):
    (tmp_path / "b1_vs_ns3_2026-01-02.json").write_text(json.dumps(record("2026-01-02", 4.5)))
    (tmp_path / "b1_vs_ns3_2026-03-04.json").write_text(json.dumps(record("2026-03-04", 5.5)))
    doc = "x\n<!-- peer-table b1 -->\nold numbers\n<!-- /peer-table -->\ny\n"
    out = peer_tables.render(doc, tmp_path)
    assert out.startswith("x\n<!-- peer-table b1 -->\n") and out.endswith("<!-- /peer-table -->\ny\n")
    assert "old numbers" not in out
    assert "2026-03-04" in out and "b1_vs_ns3_2026-03-04.json" in out and "2026-01-02" not in out
    assert "| mean FCT | 5.50 ms | 5.00 ms | 1.10 |" in out
    assert "| simulation loop wall | 4.00 s | 900 s | 1/225 |" in out
    assert peer_tables.render(out, tmp_path) == out, "rendering is idempotent"


def test_the_b1_ablation_is_written_per_rule_and_refused_without_one(tmp_path):
    rec = record("2026-01-02", 4.5)
    (tmp_path / "b1_vs_ns3_2026-01-02.json").write_text(json.dumps(rec))
    doc = "<!-- peer-table b1-rules -->\n<!-- /peer-table -->\n"
    with pytest.raises(SystemExit, match="no ablation"):
        peer_tables.render(doc, tmp_path)
    row = {"mean_fct_ms": 4.0, "p99_fct_ms": 66.0, "drops": 90_000, "retransmits": 110_000, "timeouts": 150, "fast_recoveries": 4_000}
    rec["ablation"] = [{"defaults": ["rescue_retransmission"], **row}, {"defaults": ["all"], **row, "timeouts": 30}]
    (tmp_path / "b1_vs_ns3_2026-01-02.json").write_text(json.dumps(rec))
    out = peer_tables.render(doc, tmp_path)
    assert "| b1.toml (all of ns-3's rules) | 0.90 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |" in out
    assert "| `rescue_retransmission` at lbsim's default | 0.80 | 1.10 | 0.90 | 1.00 | 0.50 | 1.00 |" in out
    assert "| none: every rule at lbsim's default | 0.80 | 1.10 | 0.90 | 1.00 | 0.10 | 1.00 |" in out


def test_a_stale_block_is_found_and_an_unknown_one_refused(tmp_path):
    (tmp_path / "b1_vs_ns3_2026-01-02.json").write_text(json.dumps(record("2026-01-02", 4.5)))
    doc = "<!-- peer-table b1-speed -->\n<!-- /peer-table -->\n"
    out = peer_tables.render(doc, tmp_path)
    assert "| B1, 5,000 flows, simulation loop | 4.00 s (25.0 M events) | 900 s | 1/225 |" in out, "the empty block is filled"
    with pytest.raises(SystemExit, match="unknown peer-table block `nope`"):
        peer_tables.render("<!-- peer-table nope -->\n<!-- /peer-table -->\n", tmp_path)


def test_htsim_tables_come_from_the_latest_record_of_each_rule_set(tmp_path):
    def rec(date, drops):
        side = {"counts": {"drops": drops, "mean FCT ms": 150.0}, "events": 100_000_000,
                "time": {"wall_s": 40.0, "cpu_s": 40.0, "max_rss_mb": 160.0}}
        return {"date": date, "commit": "b" * 40, "machine": {"cores": 2, "cpu": "CPU"}, "command": "bench/htsim/compare.py",
                "seed": 1, "lbsim_sets": [], "lbsim": side,
                "htsim": {**side, "counts": {"drops": 100_000, "mean FCT ms": 160.0}, "events": 300_000_000,
                          "time": {"wall_s": 140.0, "cpu_s": 139.0, "max_rss_mb": 120.0}}}

    (tmp_path / "htsim_k8_2026-01-01.json").write_text(json.dumps(rec("2026-01-01", 90_000)))
    (tmp_path / "htsim_k8_2026-02-01.json").write_text(json.dumps(rec("2026-02-01", 101_000)))
    (tmp_path / "htsim_k8_rfc_2026-03-01.json").write_text(json.dumps(rec("2026-03-01", 120_000)))
    out = peer_tables.htsim_k8(tmp_path)
    assert "| drops | 101,000 | 100,000 | 1.01 |" in out and "| drops | 120,000 | 100,000 | 1.20 |" in out
    assert "90,000" not in out, "an older record of the same rule set is not quoted"
    assert "| wall | 40.0 s | 140.0 s | 0.29 |" in out and "| events | 100.0 M | 300.0 M | 0.33 |" in out
    assert "htsim_k8_2026-02-01.json` (2026-02-01)" in peer_tables.htsim_speed(tmp_path)


def slowdown(median, p99, below_1=0.25, count=1000):
    return [{"bucket": b, "count": count, "median": median, "p99": p99, "p95": p99, "mean": median, "mean_unclamped": median,
             "below_1": below_1} for b in ("<10KB", "10-100KB", "100KB-1MB", ">1MB", "all")]


def hpcc_records(tmp_path, date="2026-05-06"):
    """Fake rdma_vs_hpcc, rdma_cost_vs_tcp_hpcc and rdma_pfc_incast_vs_hpcc
    records in tmp_path."""
    hc = "c" * 40
    machine = {"cores": 2, "cpu": "CPU", "system": "Linux"}

    def side(median, p99, below_1, cpu, rss, pauses=0):
        return {"slowdown": {"completed": 5000, "slowdown": slowdown(median, p99, below_1, 5000),
                             "pfc": {"pause_frames": pauses, "resume_frames": pauses,
                                     "host": {"pause": pauses, "resume": pauses}, "switch": {"pause": 0, "resume": 0}}},
                "time": {"cpu_s": cpu, "max_rss_mb": rss, "hpcc_commit": hc}}

    run = {"date": date, "commit": "d" * 40, "machine": machine,
           "lbsim": side(1.05, 6.6, 0.20, 50.0, 140.0), "hpcc": side(1.0, 6.0, 0.30, 500.0, 350.0)}
    vs = {"command": "python3 bench/hpcc/compare.py --record FILE",
          "runs": {"websearch_30pct": run, "websearch_50pct": {**run, "lbsim": side(1.02, 6.3, 0.1, 60.0, 140.0)}}}
    (tmp_path / f"rdma_vs_hpcc_{date}.json").write_text(json.dumps(vs))
    kinds = lambda arrive, **more: {"arrive": arrive, "flow_arrival": 10, **more}  # noqa: E731
    cost = {"date": date, "commit": "e" * 40, "machine": machine, "command": "bench/hpcc/compare.py --tcp", "flows": "flows_ws30.txt",
            "hpcc": {"time": {"cpu_s": 780.0, "hpcc_commit": hc}},
            "lbsim": {"events": 200_000_000, "events_by_kind": kinds(120_000_000, port_free=70_000_000, qp_timer=60_000),
                      "time": {"cpu_s": 100.0}},
            "lbsim_tcp": {"events": 80_000_000, "events_by_kind": kinds(60_000_000, tcp_timer=20_000, nic_ready=70_000),
                          "time": {"cpu_s": 40.0}}}
    (tmp_path / f"rdma_cost_vs_tcp_hpcc_{date}.json").write_text(json.dumps(cost))
    off = {"hpcc": {"pause_frames_received_by_hosts": 1200, "resume_frames_received_by_hosts": 1199,
                    "pause_frames_received_by_switches": 0, "ports_paused": 15, "paused_port_time_us": 44000.0,
                    "slowdown_median": 14.5, "slowdown_max": 14.6},
           "lbsim": {"pause_frames": 1300, "resume_frames": 1301, "host_paused_us": 45500.0, "switch_port_paused_us": 0.0,
                     "ingress_drops": 0, "cnps": 0, "slowdown_median": 14.8, "slowdown_max": 14.9}}
    on = {"hpcc": {**off["hpcc"], "pause_frames_received_by_hosts": 0, "slowdown_median": 17.25},
          "lbsim": {**off["lbsim"], "pause_frames": 0, "slowdown_median": 17.5}}
    incast = {"date": date, "commit": "f" * 40, "machine": machine, "hpcc_commit": hc,
              "command": "python3 bench/hpcc/incast.py --hpcc CHECKOUT --out RUNS", "ecn_off": off, "dcqcn_on": on}
    (tmp_path / f"rdma_pfc_incast_vs_hpcc_{date}.json").write_text(json.dumps(incast))


def test_the_hpcc_comparison_is_written_from_its_record(tmp_path):
    hpcc_records(tmp_path)
    out = peer_tables.render("<!-- peer-table rdma-hpcc -->\n<!-- /peer-table -->\n", tmp_path)
    assert "| 30 % | < 10 KB | 5,000 | 1.050 / 1.000 | 6.60 / 6.00 |" in out
    assert "| 50 % | > 1 MB | 5,000 | 1.020 / 1.000 | 6.30 / 6.00 |" in out
    text = " ".join(out.split())
    assert "Every median is within 5 % and every p99 within 10 %" in text
    assert "the largest median gap is 5.00 % (< 10 KB at 30 %)" in text
    assert "at 30 %, 30 % in the reference against 20 % here" in text
    assert "lbsim at commit ddddddd, HPCC at commit ccccccc, 2-core CPU" in text
    assert "rdma_vs_hpcc_2026-05-06.json` (2026-05-06)" in text


def test_the_incast_speed_and_readme_blocks_are_written_from_their_records(tmp_path):
    hpcc_records(tmp_path)
    incast = " ".join(peer_tables.rdma_incast(tmp_path).split())
    assert "received 1,200 PAUSE and 1,199 RESUME frames and its 15 paused ports spent 44.0 ms" in incast
    assert "lbsim's switches sent 1,300 PAUSE and 1,301 RESUME frames and its hosts spent 45.5 ms paused, with no drop" in incast
    assert "slowdown 14.80 here against 14.50 there" in incast and "neither pauses and the slowdown is 17.50 / 17.25" in incast
    assert "lbsim at commit fffffff, HPCC at commit ccccccc" in incast
    rec = json.loads((tmp_path / "rdma_pfc_incast_vs_hpcc_2026-05-06.json").read_text())
    rec["lbsim_version"] = "lbsim 0.1.0 (commit 1234567890abcdef; model revision r1)"
    (tmp_path / "rdma_pfc_incast_vs_hpcc_2026-05-06.json").write_text(json.dumps(rec))
    assert "lbsim built at commit 1234567, the scripts at fffffff" in " ".join(peer_tables.rdma_incast(tmp_path).split())
    speed = " ".join(peer_tables.rdma_speed(tmp_path).split())
    # floor: 120 M arrivals at 40 s / 80 M events = 60 s; the reference's 780 s over it is 13x, 30x / 13x = 2.3
    assert "is 60.0 s: 13.0x faster than the reference" in speed and "events 2.3x cheaper" in speed
    assert "| RDMA (DCQCN, PFC) | 200.0 M | 120.0 M | 70.0 M | 0.06 M | 500 ns |" in speed
    assert "| TCP, same flows | 80.0 M | 60.0 M | — | 0.09 M (incl. NIC wake-ups) | 500 ns |" in speed
    assert "not timed beside lbsim's; they took 500 s and 500 s of CPU (30 % and 50 %)" in speed and "That is 10.0x and 8.3x faster" in speed
    readme = " ".join(peer_tables.rdma_readme(tmp_path).split())
    assert "median slowdown agrees within 5 % and its 99th percentile within 10 %" in readme
    assert "make 2.00x TCP's packet arrivals, which caps a per-packet model at about 13x" in readme
    assert "lbsim at commit eeeeeee" in readme and "rdma_cost_vs_tcp_hpcc_2026-05-06.json" in readme


def test_a_record_without_cores_says_so(tmp_path):
    hpcc_records(tmp_path)
    path = tmp_path / "rdma_vs_hpcc_2026-05-06.json"
    rec = json.loads(path.read_text())
    for run in rec["runs"].values():
        run["machine"] = {"cpu": "x86_64", "system": "Linux-6"}
    path.write_text(json.dumps(rec))
    assert "x86_64 (Linux-6), core count not recorded" in " ".join(peer_tables.rdma_hpcc(tmp_path).split())


def test_the_hpcc_reference_runs_are_written_from_their_record(tmp_path):
    stats = {"flows": 6000, "completed": 6000, "last_finish_ns": 2_018_000_000, "slowdown": slowdown(1.2, 6.0, 0.125, 6000),
             "pfc": {"switch": {"pause": 0, "resume": 0}, "host": {"pause": 0, "resume": 0}, "ports_paused": 0,
                     "paused_port_time_ns": 0}}
    run = {"workload": "web search, load 0.3 of the host links, 10 ms of Poisson arrivals from 2 s, seed 1",
           "time": {"command": "nice -n 10 /usr/bin/time -v third", "wall_s": 400.0, "cpu_s": 399.5, "max_rss_mb": 300.2},
           "stats": stats}
    rec = {"date": "2026-07-08", "commit": "a" * 40, "hpcc_commit": "c" * 40, "command": "bash bench/hpcc/reference.sh CHECKOUT RUNS",
           "machine": {"cores": 4, "cpu": "CPU", "compiler": "g++ 13"}, "runs": {"ws30": run}}
    (tmp_path / "hpcc_reference_2026-07-08.json").write_text(json.dumps(rec))
    out = " ".join(peer_tables.hpcc_reference(tmp_path).split())
    assert "| ws30 (30 %, 10 ms) | 6,000 | 6,000 | 2.018000 s | 400.0 s | 399.5 s | 300 MiB |" in out
    assert "| ws30 | <10KB | 6,000 | 1.200 | 6.000 | 6.000 | 1.200 | 1.200 | 12.5 % |" in out
    assert "with g++ 13, on a 4-core CPU; runs at nice 10" in out and "this repository at commit aaaaaaa" in out
    assert "hpcc_reference_2026-07-08.json" in out and "no PAUSE or RESUME frame" in out


def htsim_record(seed=1, lbsim=None, htsim=None, date="2026-01-01", sets=()):
    """A compare.py record with flow-level readings; counts are lbsim's and
    htsim's five totals (a dict of changes to a base), the flow-level
    readings differ between the two sides so that a swap shows."""
    base = {"drops": 100_000, "retransmits": 200_000, "timeouts": 1_000, "fast recoveries": 5_000, "mean FCT ms": 150.0}
    lb, hs = {**base, **(lbsim or {})}, {**base, **(htsim or {})}

    def flows(n, scale):
        side = lambda c, f: {"retransmits": int(c["retransmits"] * f), "timeouts": int(c["timeouts"] * f),  # noqa: E731
                             "fast_recoveries": int(c["fast recoveries"] * f), "mean_fct_ms": c["mean FCT ms"] * f}
        return {"flows": n, "lbsim": side(lb, scale), "htsim": side(hs, scale * 0.9)}

    flow = {"cm_id": 869, "size_bytes": 29_000_000, "lbsim": {"retransmits": 19_985, "timeouts": 1, "fast_recoveries": 217},
            "htsim": {"retransmits": 141, "timeouts": 1, "fast_recoveries": 0}}
    return {"date": date, "commit": "c" * 40, "machine": {"cores": 2, "cpu": "CPU"}, "command": "bench/htsim/compare.py",
            "seed": seed, "lbsim_sets": list(sets), "lbsim": {"counts": lb},
            "htsim": {"counts": hs, "command": "htsim_k8", "commit": "d" * 40},
            "by_flow": {"all": flows(2000, 1.0), "no timeout in either": flows(1500, 0.1), "timeout in lbsim only": flows(60, 0.2),
                        "timeout in htsim only": flows(90, 0.2)},
            "lost_handshakes": {"lbsim": {"flows": 87, "fct_share": 0.78, "others_mean_fct_ms": 40.3},
                                "htsim": {"flows": 120, "fct_share": 0.82, "others_mean_fct_ms": 40.8}},
            "fast_recovery_excess": {"total": 361, "of_top": 217, "flows": [flow]},
            "receiver_drops": {"top": [{"host": 92, "lbsim": 186, "htsim": 3_169, "flow": flow}],
                               "rest": {"ports": 125, "lbsim": 61_276, "htsim": 61_700}},
            "reordered_segments": 0}


def flat(text: str) -> str:
    """A rendered block with its line breaks undone (prose is wrapped)."""
    return " ".join(text.split())


def test_htsim_fidelity_blocks_render_each_reading_from_its_record(tmp_path):
    def put(name, rec):
        (tmp_path / f"{name}_2026-01-01.json").write_text(json.dumps(rec))

    put("htsim_k8", htsim_record(lbsim={"drops": 101_000}))
    put("htsim_k8_seed2", htsim_record(seed=2, lbsim={"drops": 93_600, "mean FCT ms": 130.0}))
    put("htsim_k8_seed3", htsim_record(seed=3, lbsim={"drops": 108_000}))
    put("htsim_k8_rfc", htsim_record(lbsim={"drops": 120_000}, htsim={"drops": 119_000}))
    put("htsim_k8_defaults", htsim_record(lbsim={"drops": 120_000}))
    for rule, fr in [("fr_ssthresh", 4_900), ("rto_ssthresh", 5_100), ("recovery_exit", 5_000), ("recover", 3_000),
                     ("rto_tick_ms", 4_500)]:
        put(f"htsim_k8_without_{rule}", htsim_record(lbsim={"fast recoveries": fr}))
    put("htsim_k8_hostnic", htsim_record(lbsim={"drops": 60_000, "retransmits": 100_000, "timeouts": 500,
                                                "fast recoveries": 10_000, "mean FCT ms": 75.0}))
    put("htsim_inrack", htsim_record(lbsim={"drops": 63_550, "fast recoveries": 874}, htsim={"drops": 72_490, "fast recoveries": 512}))
    put("htsim_inrack_rfc", htsim_record())
    seeds = flat(peer_tables.htsim_seeds(tmp_path))
    assert "| drops | 101,000 / 93,600 / 108,000 | 100,000 | 0.94-1.08 |" in seeds
    # 6.4 % is "within 7 %": a bound rounds up; mean FCT 130 / 150 is 13.3 % off: within 14 %
    assert "fast recoveries are within 8 % of htsim's in every seed, the mean FCT within 14 %" in seeds
    within = flat(peer_tables.htsim_within(tmp_path))
    assert "fast recoveries are within 8 % of htsim's" in within and "seeds 1, 2, 3, and its mean FCT within 14 %" in within
    d = flat(peer_tables.htsim_defaults(tmp_path))
    assert "| none: lbsim's RFC defaults | 120,000 (1.20) |" in d
    assert "| `recover` back to lbsim's default | 100,000 (1.00) | 200,000 (1.00) | 1,000 (1.00) | 3,000 (0.60) |" in d
    assert "`recover` alone moves lbsim's fast recoveries most (5,000 with all five, 3,000 without it)" in d
    inrack = flat(peer_tables.htsim_inrack(tmp_path))
    assert "| drops | 63,550 / 72,490 | 0.88 |" in inrack
    assert "lbsim has 362 more fast recoveries" in inrack, "the excess is the table's, not the per-flow sum"
    assert "toward host 92, 186 against 3,169" in inrack and "`.cm` id 869 (29.0 MB): 217 against 0" in inrack
    assert "(2,983 of the 8,940 difference)" in inrack
    assert "| 87 / 120 | 78 % / 82 % |" in flat(peer_tables.htsim_handshakes(tmp_path))
    flows = flat(peer_tables.htsim_flows(tmp_path))
    assert "(75 % of the web-search list" in flows and "60 time out in lbsim only, 90 in" in flows
    assert "retransmits 20,000 / 18,000, fast recoveries 500 / 450" in flows, "lbsim first, htsim second"
    host = flat(peer_tables.htsim_hostnic(tmp_path))
    assert "give 60,000 drops" in host and "drops 0.50x, retransmits 0.50x, timeouts 0.50x, fast recoveries 2.00x" in host
    put("htsim_k8_without_recover", htsim_record(htsim={"drops": 1}))
    with pytest.raises(SystemExit, match="another htsim run"):
        peer_tables.htsim_defaults(tmp_path)
    put("htsim_k8_seed2", htsim_record(seed=2, htsim={"drops": 1}))
    with pytest.raises(SystemExit, match="another htsim run"):
        peer_tables.htsim_seeds(tmp_path)


def test_lbsim_standings_come_from_the_latest_scale_record(tmp_path):
    def rec(date, b1_eps):
        row = lambda n, what, eps, rss: {"scenario": n, "what": what, "build": "new (this tree)", "wall_s": 2.0,  # noqa: E731
                                         "setup_s": 0.0, "events": 25_000_000, "events_per_s": eps, "packets_per_s": 3e6,
                                         "peak_rss_mb": rss, "mean_fct_us": 5000.0, "flows_digest": "ab" * 8}
        return {"date": date, "commit": "e" * 40, "machine": {"cores": 2, "cpu": "CPU"}, "repeat": 2,
                "command": "python3 bench/scale.py --repeat 2", "builds": {"new (this tree)": "e" * 40},
                "rows": [row("b1", "B1: 32 hosts", b1_eps, 15.0), row("k8", "k=8 fat-tree (128 hosts), 10,000 flows", 7e6, 18.0),
                         row("k24", "k=24 fat-tree (3,456 hosts), 2,000 x 1 MB", 3.5e6, 67.0)]}

    (tmp_path / "scale_2026-01-01.json").write_text(json.dumps(rec("2026-01-01", 9e6)))
    (tmp_path / "scale_2026-02-01.json").write_text(json.dumps(rec("2026-02-01", 12.9e6)))
    speed = flat(peer_tables.lbsim_speed(tmp_path))
    assert "runs B1 at 12.9 M events/s in 15 MB, and a k=24 fat-tree (3,456 hosts) at 3.5 M events/s in 67 MB" in speed
    assert "scale_2026-02-01.json` (2026-02-01)" in speed and "9.0 M" not in speed
    table = peer_tables.lbsim_standings(tmp_path)
    assert "| k8 | k=8 fat-tree (128 hosts), 10,000 flows | 25,000,000 | 7.00 | 3.00 | 2.00 s | 18 MB |" in table


def test_scheme_verdicts_are_compares_own_and_name_their_run(tmp_path):
    prov = {"git_commit": "f" * 40, "git_dirty": False, "cpu_model": "CPU", "runs_started_utc": ["2026-01-02T10:00:00Z"],
            "written_utc": "2026-01-02T10:07:00Z", "command_line": "lbsim compare examples/rdma_dcqcn.toml --out OUT"}
    row = lambda arm, metric, verdict: {"scheme": arm, "baseline": "ecmp", "metric": metric, "seeds": 3,  # noqa: E731
                                        "verdict": verdict, "provenance": prov}
    rows = [row("letflow", "fct_mean", "letflow vs ecmp on mean FCT: no difference detectable with 3 seeds (0.94-1.05)"),
            row("conga", "fct_mean", "conga vs ecmp on mean FCT: no difference detectable with 3 seeds (0.87-1.00)"),
            row("conga", "fct_p50", "conga is 1.19x faster than ecmp on median FCT (1.06-1.35)"),
            row("drill", "drops", "drill vs ecmp on drops: no difference detectable: both are 0 in all 3 seeds"),
            row("drill", "fct_mean", "drill is 62.55x slower than ecmp on mean FCT (58.72-66.63)")]
    (tmp_path / "compare_rdma_dcqcn_2026-01-02.json").write_text(json.dumps(rows))
    out = peer_tables.rdma_schemes(tmp_path)
    assert "- letflow: no difference from ecmp detectable with 3 seeds on any of the 1 metrics" in out
    assert "- conga is 1.19x faster than ecmp on median FCT (1.06-1.35)\n- drill is 62.55x" in out
    assert "no difference detectable: both are 0" not in out and "(0.87-1.00)" not in out, "only differences are listed"
    assert "lbsim at commit fffffff, CPU, runs from 10:00 to 10:07 UTC" in flat(out)
    readme = flat(peer_tables.rdma_schemes_readme(tmp_path))
    assert "letflow: no difference from ecmp detectable; conga is 1.19x faster" in readme and "2026-01-02" in readme
