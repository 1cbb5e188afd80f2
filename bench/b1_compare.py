#!/usr/bin/env python3
"""Peer benchmark B1: lbsim and ns-3 side by side on the *same* flows.

1. exports lbsim's B1 flow list (examples/b1.toml, N flows at 60 % load);
2. runs lbsim on exactly those flows (workload.kind = "flow_list");
3. runs ns-3 (bench/ns3_b1.py, B1 for ns-3 3.44; `pip install
   ns3==3.44.post0` into --ns3-python's environment) on the same CSV, or
   with --ns3-from takes ns-3's side from an earlier record of the same
   flow list (ns-3 does not change; its run takes 15-20 minutes);
4. prints wall time of each simulation loop, the ratio, events/s, peak RSS,
   mean / p99 FCT (overall, <100 KB, >10 MB), drops and the senders' loss
   response side by side;
5. with --ablate, reruns lbsim once with each of ns-3's rules that
   examples/b1.toml sets put back to lbsim's default, and once with all
   of them, to show what each rule moves;
6. with --record FILE, writes all of it as JSON (bench/results/): the date,
   the lbsim build's commit and model revision, this repository's commit,
   the machine, the command and both simulators' numbers. README.md and
   docs/performance.md quote the latest record (tools/peer_tables.py).

    python bench/b1_compare.py --flows 5000 --record bench/results/b1_vs_ns3_DATE.json
    python bench/b1_compare.py --ns3-from bench/results/b1_vs_ns3_DATE.json --record ...
    python bench/b1_compare.py --flows 1000 --skip-ns3   # lbsim only

ns-3 setup (about 15 minutes: pip builds cppyy from source):
    python3 -m venv /tmp/ns3-venv && /tmp/ns3-venv/bin/pip install ns3==3.44.post0
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from measure import machine, repo_commit, run_timed  # noqa: E402

NS3_SCRIPT = ROOT / "bench" / "ns3_b1.py"

#: The side-by-side rows: label, key in each simulator's numbers, format.
ROWS = [
    ("simulation loop wall (s)", "wall_run_s", "{:.2f}"),
    ("whole process wall (s)", "wall_total_s", "{:.2f}"),
    ("peak RSS (MB)", "peak_rss_mb", "{:.0f}"),
    ("flows completed", "completed", "{}"),
    ("mean FCT (ms)", "mean_fct_ms", "{:.3f}"),
    ("p99 FCT (ms)", "p99_fct_ms", "{:.3f}"),
    ("mean FCT <100KB (ms)", "mean_lt100KB_ms", "{:.3f}"),
    ("mean FCT >10MB (ms)", "mean_gt10MB_ms", "{:.3f}"),
    ("drops", "drops", "{}"),
    ("retransmits", "retransmits", "{}"),
    ("timeouts", "timeouts", "{}"),
    ("fast recoveries", "fast_recoveries", "{}"),
]


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] if s else float("nan")


def fct_numbers(fct_ms: list[float], sizes: list[int]) -> dict:
    """Mean and p99 FCT, and the means of flows below 100 KB and above 10 MB."""
    small = [f for f, s in zip(fct_ms, sizes) if s < 100_000]
    large = [f for f, s in zip(fct_ms, sizes) if s > 10_000_000]
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return {"completed": len(fct_ms), "mean_fct_ms": mean(fct_ms), "p99_fct_ms": pct(fct_ms, 0.99),
            "mean_lt100KB_ms": mean(small), "mean_gt10MB_ms": mean(large)}


def lbsim_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "lbsim.cli", *args]


def lbsim_build() -> dict:
    """The installed lbsim's version line: its commit and model revision."""
    line = subprocess.run(lbsim_cmd("--version"), check=True, capture_output=True, text=True).stdout.strip()
    m = re.search(r"commit (\w+); model revision ([\w.-]+)", line)
    return {"version": line, "commit": m[1] if m else "unknown", "model_revision": m[2] if m else "unknown"}


def run_lbsim(scenario: Path, sets: list[str], flows_csv: Path, out: Path) -> dict:
    replay = [*sets, "workload.kind=flow_list", f'workload.flow_list="{flows_csv}"']
    _, wall_total, rss = run_timed(lbsim_cmd("run", str(scenario), "--out", str(out), "--quiet", "--force")
                                   + sum([["--set", s] for s in replay], []))
    s = json.loads((out / "summary.json").read_text())
    import pandas as pd

    f = pd.read_parquet(out / "flows.parquet")
    done = f[f.completed]
    t = s["transport"]
    return {
        "wall_run_s": s["wall_s"],
        "wall_total_s": wall_total,
        "events": s["events"],
        "events_per_s": s["events_per_s"],
        "peak_rss_mb": rss,
        **fct_numbers(list(done.fct_us / 1e3), list(done.size_bytes)),
        "drops": s["network"]["drops"]["total"],
        "retransmits": t["retransmits"],
        "timeouts": t["timeouts"],
        "fast_recoveries": t["fast_recoveries"],
    }


def run_ns3(python: str, script: Path, flows_csv: Path, seed: int, work: Path) -> dict:
    nsdir = Path(tempfile.mkdtemp(prefix="ns3-b1-"))  # ns-3 scans its cwd for libraries: keep it empty
    fct_csv = work / "ns3_fct.csv"
    out, wall_total, rss = run_timed([python, str(script), "--flow-list", str(flows_csv), "--fct-out", str(fct_csv),
                                      "--seed", str(seed)], cwd=str(nsdir))
    (work / "ns3_stdout.txt").write_text(out)
    kv = dict(re.findall(r"(\w+)=([^\s]+)", out))
    import pandas as pd

    nf = pd.read_csv(fct_csv)
    nd = nf[nf.fct_s >= 0]
    return {
        "version": kv["ns3"],
        "date": datetime.date.today().isoformat(),
        "wall_run_s": float(kv["wall_run_s"]),
        "wall_total_s": wall_total,
        "peak_rss_mb": rss,
        **fct_numbers(list(nd.fct_s * 1e3), list(nd["size"])),
        "drops": int(kv["drops"]),
        "retransmits": int(kv["retransmits"]),
        "timeouts": int(kv["timeouts"]),
        "fast_recoveries": int(kv["fast_recoveries"]),
        "link_packets": int(kv["tx_packets_all_links"]),
    }


#: examples/b1.toml's [transport] keys that model ns-3 3.44's departures
#: from lbsim's defaults (docs/fidelity.md, "B1 against ns-3").
NS3_RULES = ["rto_ssthresh", "fr_ssthresh", "prr_bound", "lost_retransmission", "rescue_retransmission",
             "partial_ack_timer", "partial_ack_retransmit"]


def lbsim_default(key: str) -> str:
    """A transport key's default, as the generated docs/scenario.md states it."""
    for line in (ROOT / "docs" / "scenario.md").read_text().splitlines():
        if line.startswith(f"| `transport.{key}` |"):
            return line.split("|")[4].strip()
    sys.exit(f"docs/scenario.md does not document transport.{key}")


def ablation(scenario: Path, sets: list[str], flows_csv: Path, work: Path) -> list[dict]:
    """lbsim's numbers with each ns-3 rule back at lbsim's default, then all."""
    keys = [[k] for k in NS3_RULES] + [NS3_RULES]
    out = []
    for ks in keys:
        back = [f"transport.{k}={lbsim_default(k)}" for k in ks]
        r = run_lbsim(scenario, sets + back, flows_csv, work / f"ablate_{'all' if len(ks) > 1 else ks[0]}")
        row = {"defaults": ["all"] if len(ks) > 1 else ks, **{k: r[k] for k in ABLATE_COLUMNS}}
        out.append(row)
        print(f"  {'+'.join(row['defaults']):24} at lbsim's default: " + ", ".join(f"{k} {r[k]:.4g}" for k in ABLATE_COLUMNS), flush=True)
    return out


#: What the ablation keeps per run.
ABLATE_COLUMNS = ["mean_fct_ms", "p99_fct_ms", "drops", "retransmits", "timeouts", "fast_recoveries"]


def timeout_split(lbsim_flows: Path, ns3_flows: Path) -> dict:
    """Each flow by where it timed out (in neither simulator, in one, in
    both): how many, and their mean and summed FCT in each simulator."""
    import pandas as pd

    lb = pd.read_parquet(lbsim_flows).sort_values(["start_us", "flow_id"], kind="stable").reset_index(drop=True)
    ns = pd.read_csv(ns3_flows)
    if len(lb) != len(ns) or (lb.size_bytes.values != ns["size"].values).any() or (lb.src.values != ns.src.values).any():
        sys.exit(f"{ns3_flows}: not the flows lbsim ran, in their order")
    lf, nf = lb.fct_us / 1e3, ns.fct_s.where(ns.fct_s >= 0) * 1e3
    lt, nt = lb.timeouts > 0, ns.timeouts > 0
    out = {}
    for group, m in [("neither", ~lt & ~nt), ("ns-3 only", ~lt & nt), ("lbsim only", lt & ~nt), ("both", lt & nt)]:
        out[group] = {"flows": int(m.sum()), "lbsim_mean_fct_ms": float(lf[m].mean()), "ns3_mean_fct_ms": float(nf[m].mean()),
                      "lbsim_fct_sum_ms": float(lf[m].sum()), "ns3_fct_sum_ms": float(nf[m].sum())}
    return out



def command_line(argv: list[str]) -> str:
    """This run's command as the record keeps it: folders outside the
    repository named by their option, not by this machine's paths."""
    names = {"--out": "OUT", "--ns3-python": "NS3_PYTHON", "--ns3-script": "NS3_SCRIPT"}
    words, i = [], 0
    while i < len(argv):
        opt, _, val = argv[i].partition("=")
        if opt in names:
            val = val or (argv[i + 1] if i + 1 < len(argv) else "")
            i += 0 if "=" in argv[i] else 1
            words += [opt, names[opt]]
        else:
            words.append(argv[i])
        i += 1
    return " ".join(["python3 bench/b1_compare.py", *words])


def side_by_side(lb: dict, ns: dict | None) -> str:
    lines = [f"{'':28} {'lbsim':>12} {'ns-3':>12} {'lbsim/ns-3':>11}"]
    for name, k, fmt in ROWS:
        lv = lb.get(k)
        nv = ns.get(k) if ns else None
        ratio = f"{lv / nv:.3f}" if isinstance(lv, (int, float)) and isinstance(nv, (int, float)) and nv else ""
        cell = lambda v: fmt.format(v) if v is not None else "-"  # noqa: E731
        lines.append(f"{name:28} {cell(lv):>12} {cell(nv):>12} {ratio:>11}")
    lines.append(f"lbsim events: {lb['events']} ({lb['events_per_s'] / 1e6:.2f} M events/s)")
    if ns:
        lines.append(f"speed-up (simulation loop): {ns['wall_run_s'] / lb['wall_run_s']:.1f}x; "
                     f"(whole process): {ns['wall_total_s'] / lb['wall_total_s']:.1f}x")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=5000)
    ap.add_argument("--load", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ns3-python", default="/tmp/ns3-venv/bin/python")
    ap.add_argument("--ns3-script", default=str(NS3_SCRIPT), help="the ns-3 side of B1 (default: bench/ns3_b1.py)")
    ns_src = ap.add_mutually_exclusive_group()
    ns_src.add_argument("--skip-ns3", action="store_true")
    ns_src.add_argument("--ns3-from", type=Path, metavar="RECORD", help="ns-3's side from an earlier record of the same flows")
    ap.add_argument("--out", default=None, help="folder to keep the flow list, FCTs and a JSON report")
    ap.add_argument("--ablate", action="store_true", help="also run lbsim with each ns-3 rule of b1.toml at lbsim's default")
    ap.add_argument("--record", type=Path, metavar="FILE", help="write the comparison as JSON here (bench/results/)")
    a = ap.parse_args()

    work = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="lbsim-b1-"))
    work.mkdir(parents=True, exist_ok=True)
    scenario = ROOT / "examples" / "b1.toml"
    sets = [f"workload.flows={a.flows}", f"workload.load={a.load}", f"seed={a.seed}"]
    flows_csv = work / "flows.csv"
    subprocess.run(lbsim_cmd("flows", str(scenario), "--out", str(flows_csv)) + sum([["--set", s] for s in sets], []),
                   check=True, capture_output=True)
    nflows = sum(1 for _ in open(flows_csv)) - 1
    digest = hashlib.sha256(flows_csv.read_bytes()).hexdigest()

    build = lbsim_build()
    lb = run_lbsim(scenario, sets, flows_csv, work / "lbsim")
    ns, ns_flows = None, None
    if a.ns3_from:
        old = json.loads(a.ns3_from.read_text())
        if old.get("flow_list_sha256") != digest:
            sys.exit(f"--ns3-from: {a.ns3_from} ran another flow list (flows, load or seed differ)")
        ns = {"command": old["command"], **old["ns3"]}
        if ns.get("flows_file"):
            ns_flows = a.ns3_from.parent / ns["flows_file"]
    elif not a.skip_ns3:
        script = Path(a.ns3_script).resolve()
        if not script.exists() or not Path(a.ns3_python).exists():
            sys.exit("ns-3 not found: pass --ns3-python/--ns3-script (see this script's docstring) or --skip-ns3")
        ns = {**run_ns3(a.ns3_python, script, flows_csv, a.seed, work), "command": command_line(sys.argv[1:])}
        ns_flows = work / "ns3_fct.csv"
    split = timeout_split(work / "lbsim" / "flows.parquet", ns_flows) if ns_flows else None
    if a.ablate:
        print("ablation: lbsim with ns-3's rules put back to lbsim's defaults")
    ablated = ablation(scenario, sets, flows_csv, work) if a.ablate else None

    mach = machine()
    print(f"B1: {nflows} flows, load {a.load}, seed {a.seed}; machine: {mach['cores']} cores, {mach['cpu']}")
    print(f"{build['version']}" + (f"; ns-3 {ns['version']} (run {ns['date']})" if ns else ""))
    print(side_by_side(lb, ns))
    for group, v in (split or {}).items():
        print(f"flows with a timeout in {group:12} {v['flows']:5}: mean FCT {v['lbsim_mean_fct_ms']:8.3f} / "
              f"{v['ns3_mean_fct_ms']:8.3f} ms, summed {v['lbsim_fct_sum_ms']:9.1f} / {v['ns3_fct_sum_ms']:9.1f} ms")
    report = {
        "date": datetime.date.today().isoformat(),
        "commit": build["commit"],
        "model_revision": build["model_revision"],
        "bench_commit": repo_commit(),
        "machine": mach,
        "command": command_line(sys.argv[1:]),
        "scenario": "examples/b1.toml",
        "flows": nflows,
        "load": a.load,
        "seed": a.seed,
        "flow_list_sha256": digest,
        "lbsim": lb,
        "ns3": ns,
        "timeout_split": split,
        "ablation": ablated,
    }
    (work / "report.json").write_text(json.dumps(report, indent=2))
    if a.record:
        if ns is None:
            sys.exit("--record needs ns-3's side (run it, or --ns3-from an earlier record)")
        a.record.parent.mkdir(parents=True, exist_ok=True)
        if not a.ns3_from:
            # ns-3's per-flow results beside the record, for --ns3-from
            ns["flows_file"] = a.record.name.removesuffix(".json") + ".ns3_flows.csv.gz"
            with open(work / "ns3_fct.csv", "rb") as src, gzip.GzipFile(a.record.parent / ns["flows_file"], "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
        a.record.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"wrote {a.record}")
    print(f"details in {work}")


if __name__ == "__main__":
    main()
