#!/usr/bin/env python3
"""Peer benchmark B1: lbsim and ns-3 side by side on the *same* flows.

1. exports lbsim's B1 flow list (examples/b1.toml, N flows at 60 % load);
2. runs lbsim on exactly those flows (workload.kind = "flow_list");
3. runs ns-3 (bench/ns3_b1.py, B1 for ns-3 3.44; `pip install
   ns3==3.44.post0` into --ns3-python's environment) on the same CSV;
4. prints wall time of each simulation loop, the ratio, events/s, peak RSS,
   and mean / p99 FCT (overall, <100 KB, >10 MB) side by side.

    python bench/b1_compare.py --flows 5000
    python bench/b1_compare.py --flows 1000 --skip-ns3   # lbsim only

ns-3 setup (2-3 minutes):
    python3 -m venv /tmp/ns3-venv && /tmp/ns3-venv/bin/pip install ns3==3.44.post0
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from measure import run_timed  # noqa: E402

NS3_SCRIPT = ROOT / "bench" / "ns3_b1.py"


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] if s else float("nan")


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=5000)
    ap.add_argument("--load", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ns3-python", default="/tmp/ns3-venv/bin/python")
    ap.add_argument("--ns3-script", default=str(NS3_SCRIPT), help="the ns-3 side of B1 (default: bench/ns3_b1.py)")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--out", default=None, help="folder to keep the flow list, FCTs and a JSON report")
    a = ap.parse_args()

    work = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="lbsim-b1-"))
    work.mkdir(parents=True, exist_ok=True)
    scenario = ROOT / "examples" / "b1.toml"
    sets = [f"workload.flows={a.flows}", f"workload.load={a.load}", f"seed={a.seed}"]
    flows_csv = work / "flows.csv"
    subprocess.run([sys.executable, "-m", "lbsim.cli", "flows", str(scenario), "--out", str(flows_csv)]
                   + sum([["--set", s] for s in sets], []), check=True, capture_output=True)
    nflows = sum(1 for _ in open(flows_csv)) - 1

    # ---- lbsim on the flow list
    lb_out = work / "lbsim"
    replay = [*sets, "workload.kind=flow_list", f'workload.flow_list="{flows_csv}"']
    _, lb_wall_total, lb_rss = run_timed([sys.executable, "-m", "lbsim.cli", "run", str(scenario), "--out", str(lb_out),
                                          "--quiet"] + sum([["--set", s] for s in replay], []))
    s = json.loads((lb_out / "summary.json").read_text())
    import pandas as pd

    f = pd.read_parquet(lb_out / "flows.parquet")
    done = f[f.completed]
    lb = {
        "wall_run_s": s["wall_s"],
        "wall_total_s": lb_wall_total,
        "events": s["events"],
        "events_per_s": s["events_per_s"],
        "peak_rss_mb": lb_rss,
        "completed": int(len(done)),
        "mean_fct_ms": done.fct_us.mean() / 1e3,
        "p99_fct_ms": pct(list(done.fct_us), 0.99) / 1e3,
        "mean_lt100KB_ms": done[done.size_bytes < 100_000].fct_us.mean() / 1e3,
        "mean_gt10MB_ms": done[done.size_bytes > 10_000_000].fct_us.mean() / 1e3,
        "drops": s["network"]["drops"]["total"],
        "timeouts": s["transport"]["timeouts"],
    }

    ns = None
    if not a.skip_ns3:
        script = Path(a.ns3_script).resolve()
        if not script.exists() or not Path(a.ns3_python).exists():
            sys.exit("ns-3 not found: pass --ns3-python/--ns3-script (see this script's docstring) or --skip-ns3")
        nsdir = Path(tempfile.mkdtemp(prefix="ns3-b1-"))  # ns-3 scans its cwd for libraries: keep it empty
        fct_csv = work / "ns3_fct.csv"
        out, ns_wall_total, ns_rss = run_timed([a.ns3_python, str(script), "--flow-list", str(flows_csv),
                                                "--fct-out", str(fct_csv), "--seed", str(a.seed)], cwd=str(nsdir))
        kv = dict(re.findall(r"(\w+)=([^\s]+)", out))
        nf = pd.read_csv(fct_csv)
        nd = nf[nf.fct_s >= 0]
        ns = {
            "wall_run_s": float(kv["wall_run_s"]),
            "wall_total_s": ns_wall_total,
            "peak_rss_mb": ns_rss,
            "completed": int(len(nd)),
            "mean_fct_ms": nd.fct_s.mean() * 1e3,
            "p99_fct_ms": pct(list(nd.fct_s), 0.99) * 1e3,
            "mean_lt100KB_ms": nd[nd["size"] < 100_000].fct_s.mean() * 1e3,
            "mean_gt10MB_ms": nd[nd["size"] > 10_000_000].fct_s.mean() * 1e3,
            "drops": kv.get("drops"),
            "link_packets": int(kv.get("tx_packets_all_links", "0")),
        }

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"B1: {nflows} flows, load {a.load}, seed {a.seed}; machine: {os.cpu_count()} cores, {cpu}")
    rows = [
        ("simulation loop wall (s)", "wall_run_s", "{:.2f}"),
        ("whole process wall (s)", "wall_total_s", "{:.2f}"),
        ("peak RSS (MB)", "peak_rss_mb", "{:.0f}"),
        ("flows completed", "completed", "{}"),
        ("mean FCT (ms)", "mean_fct_ms", "{:.3f}"),
        ("p99 FCT (ms)", "p99_fct_ms", "{:.3f}"),
        ("mean FCT <100KB (ms)", "mean_lt100KB_ms", "{:.3f}"),
        ("mean FCT >10MB (ms)", "mean_gt10MB_ms", "{:.3f}"),
        ("drops", "drops", "{}"),
    ]
    print(f"{'':28} {'lbsim':>12} {'ns-3':>12} {'lbsim/ns-3':>11}")
    for name, k, fmt in rows:
        lv = lb.get(k)
        nv = ns.get(k) if ns else None
        ratio = ""
        if ns and isinstance(lv, (int, float)) and isinstance(nv, (int, float)) and nv:
            ratio = f"{lv / nv:.3f}"
        print(f"{name:28} {fmt.format(lv) if lv is not None else '-':>12} {fmt.format(nv) if nv is not None else '-':>12} {ratio:>11}")
    print(f"lbsim events: {lb['events']} ({lb['events_per_s'] / 1e6:.2f} M events/s)")
    if ns:
        print(f"speed-up (simulation loop): {ns['wall_run_s'] / lb['wall_run_s']:.1f}x; "
              f"(whole process): {ns['wall_total_s'] / lb['wall_total_s']:.1f}x")
    report = {"flows": nflows, "load": a.load, "seed": a.seed, "lbsim": lb, "ns3": ns, "machine": {"cores": os.cpu_count(), "cpu": cpu}}
    (work / "report.json").write_text(json.dumps(report, indent=2))
    print(f"details in {work}")


if __name__ == "__main__":
    main()
