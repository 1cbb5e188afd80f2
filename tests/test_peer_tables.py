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


def test_every_quoted_record_says_when_and_how():
    results = ROOT / "bench" / "results"
    b1 = sorted(results.glob("b1_vs_ns3_*.json"))
    htsim = sorted(results.glob("htsim_k8_*.json"))
    assert b1 and htsim, "README.md quotes a B1 and an htsim record"
    for path in b1 + htsim:
        rec = json.loads(path.read_text())
        assert re.match(r"(python3 )?bench/\w+", rec["command"]), f"{path.name}: the command that wrote it"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", rec["date"]), f"{path.name}: an ISO date"
        assert re.fullmatch(r"[0-9a-f]{40}", rec["commit"]), f"{path.name}: a full commit hash"
        assert rec["machine"]["cpu"] and rec["machine"]["cores"], f"{path.name}: the machine"
    for path in b1:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", json.loads(path.read_text())["ns3"]["date"]), f"{path.name}: ns-3's run date"


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
    assert peer_tables.render(doc, tmp_path) != doc
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
