#!/usr/bin/env python3
"""lbsim against the HPCC project's RDMA simulator on the same topology and
flow files, side by side: slowdown per flow-size bucket (median, p95, p99),
PFC frames, bytes, wall time, CPU time and peak memory of both.

    python3 bench/hpcc/compare.py --topo TOPO.txt --flows FLOWS.txt \\
        (--hpcc CHECKOUT | --hpcc-run RUNDIR) --out DIR [--record FILE.json]

With ``--hpcc`` it runs the reference (bench/hpcc/hpcc_run.py, DCQCN at
100 Gb/s) into DIR/hpcc; with ``--hpcc-run`` it reads a finished run of
hpcc_run.py. lbsim runs examples/rdma_dcqcn.toml on the same files into
DIR/lbsim (``lbsim run ... --set topology.kind=hpcc ...``), timed with
/usr/bin/time -v. ``--tcp`` also runs lbsim's TCP on the same flows and
fabric (``transport.kind = "tcp"``, into DIR/lbsim_tcp) and prints what
sets the RDMA run's cost against it: events per kind (summary.json's
``events_by_kind``), packet arrivals per link (one event each, the floor of
any packet-level run) and CPU time. ``--record`` writes the summaries, the
commands, the commit and the machine as JSON (bench/results/).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"hpcc_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fct_stats = _load("fct_stats")
hpcc_run = _load("hpcc_run")
sys.path.insert(0, str(ROOT / "bench"))
from measure import machine, repo_commit  # noqa: E402


def run_lbsim(topo: Path, flows: Path, out: Path, scenario: Path, sets: list[str]) -> dict:
    """Runs lbsim on the files under /usr/bin/time -v; its time report."""
    out.mkdir(parents=True, exist_ok=True)
    lbsim = shutil.which("lbsim") or sys.exit("lbsim is not installed (pip install .)")
    cmd = [
        lbsim, "run", str(scenario),
        "--set", "topology.kind=hpcc", "--set", f"topology.file={topo.resolve()}",
        "--set", "workload.kind=hpcc", "--set", f"workload.file={flows.resolve()}",
    ]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--out", str(out), "--force"]
    done = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    (out / "stdout.txt").write_text(done.stdout)
    (out / "time.txt").write_text(done.stderr)
    if done.returncode != 0:
        sys.exit(f"lbsim failed ({done.returncode}):\n{done.stderr[-2000:]}")
    t = hpcc_run.parse_time_v(done.stderr)
    # the record names files, not this machine's paths
    t["command"] = " ".join(cmd[1:]).replace(str(topo.resolve()), topo.name).replace(str(flows.resolve()), flows.name) \
        .replace(str(scenario), scenario.name).replace(str(out), "OUT")
    return t


def side_by_side(a: dict, b: dict, ta: dict, tb: dict) -> str:
    """The two summaries (a = lbsim, b = HPCC) as one table."""
    rows = ["bucket      flows   median lbsim/hpcc      p95 lbsim/hpcc       p99 lbsim/hpcc"]
    by = {r["bucket"]: r for r in b["slowdown"]}
    for r in a["slowdown"]:
        h = by.get(r["bucket"])
        if not h or not r["count"] or not h["count"]:
            continue
        cells = [f"{r[k]:7.3f} / {h[k]:7.3f} ({r[k] / h[k]:5.3f})" for k in ("median", "p95", "p99")]
        rows.append(f"{r['bucket']:<11} {r['count']:>5}  " + "  ".join(cells))
    rows.append(f"completed: lbsim {a['completed']}, hpcc {b['completed']}")
    rows.append(f"PFC frames received: lbsim {a.get('pfc', {})}, hpcc {b.get('pfc', {})}")
    rows.append(
        f"wall {ta['wall_s']:.1f} s / {tb['wall_s']:.1f} s, CPU {ta['cpu_s']:.1f} s / {tb['cpu_s']:.1f} s "
        f"(hpcc / lbsim = {tb['cpu_s'] / ta['cpu_s']:.1f}x), peak RSS {ta['max_rss_mb']:.0f} / {tb['max_rss_mb']:.0f} MB"
    )
    return "\n".join(rows)


def cost_lines(rdma: dict, tcp: dict, t_rdma: dict, t_tcp: dict, t_hpcc: dict) -> str:
    """What the RDMA run's CPU time is made of, against TCP on the same flows."""
    ra, ta = rdma["events_by_kind"]["arrive"], tcp["events_by_kind"]["arrive"]
    # the least the RDMA model could cost: its link arrivals alone, at TCP's
    # CPU time per event
    floor = ra * t_tcp["cpu_s"] / tcp["events"]
    return "\n".join([
        f"events: rdma {rdma['events']:,} {rdma['events_by_kind']}",
        f"        tcp  {tcp['events']:,} {tcp['events_by_kind']}",
        f"link arrivals rdma / tcp = {ra / ta:.2f}; CPU rdma {t_rdma['cpu_s']:.1f} s, tcp {t_tcp['cpu_s']:.1f} s "
        f"({t_rdma['cpu_s'] / rdma['events'] * 1e9:.0f} / {t_tcp['cpu_s'] / tcp['events'] * 1e9:.0f} ns per event)",
        f"rdma's arrivals at tcp's cost per event: {floor:.1f} s CPU, hpcc / that = {t_hpcc['cpu_s'] / floor:.1f}x",
    ])



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topo", type=Path, required=True)
    ap.add_argument("--flows", type=Path, required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--hpcc", type=Path, help="an HPCC checkout, built with bench/hpcc/build.sh: run it")
    src.add_argument("--hpcc-run", type=Path, help="a finished hpcc_run.py directory: read it")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--scenario", type=Path, default=ROOT / "examples" / "rdma_dcqcn.toml")
    ap.add_argument("--set", action="append", default=[], help="a further lbsim override KEY=VALUE")
    ap.add_argument("--record", type=Path, help="write the comparison as JSON here")
    ap.add_argument("--tcp", action="store_true", help="also run lbsim's TCP on the same flows and compare the costs")
    args = ap.parse_args()

    hdir = args.hpcc_run
    if args.hpcc:
        hdir = args.out / "hpcc"
        rc = subprocess.run(
            [sys.executable, str(HERE / "hpcc_run.py"), "--hpcc", str(args.hpcc), "--topo", str(args.topo), "--flows", str(args.flows), "--out", str(hdir)]
        ).returncode
        if rc != 0:
            sys.exit(f"the HPCC run failed ({rc}); see {hdir}")
    tb = json.loads((hdir / "time.json").read_text())
    b = fct_stats.summarize(hdir / "fct.txt", hdir / "pfc.txt" if (hdir / "pfc.txt").exists() else None)
    ldir = args.out / "lbsim"
    ta = run_lbsim(args.topo, args.flows, ldir, args.scenario, args.set)
    a = fct_stats.summarize(ldir / "fct.txt")
    summary = json.loads((ldir / "summary.json").read_text())
    a["pfc"] = {k: summary["rdma"][k] for k in ("pause_frames", "resume_frames")}
    print(side_by_side(a, b, ta, tb))
    tcp = None
    if args.tcp:
        tdir = args.out / "lbsim_tcp"
        tt = run_lbsim(args.topo, args.flows, tdir, args.scenario, [*args.set, "transport.kind=tcp"])
        ts = json.loads((tdir / "summary.json").read_text())
        tcp = {"time": tt, "events": ts["events"], "events_by_kind": ts["events_by_kind"]}
        print(cost_lines(summary, ts, ta, tt, tb))
    if args.record:
        record = {
            "date": datetime.date.today().isoformat(),
            # paths by their last component: the record names files, not this machine
            "command": " ".join(["bench/hpcc/compare.py", *(Path(a).name if "/" in a else a for a in sys.argv[1:])]),
            "commit": repo_commit(),
            "machine": machine(),
            "topology": args.topo.name,
            "flows": args.flows.name,
            "lbsim": {"time": ta, "slowdown": a, "events": summary["events"], "events_by_kind": summary["events_by_kind"]},
            "lbsim_tcp": tcp,
            "hpcc": {"time": tb, "slowdown": b},
        }
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
