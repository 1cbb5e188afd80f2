#!/usr/bin/env python3
"""PFC against the HPCC project's RDMA simulator: an incast on one ToR of
its fat-tree, run by both simulators, with ECN off and with DCQCN on.

    python3 bench/hpcc/incast.py --hpcc CHECKOUT --out RUNS [--record FILE.json]

Hosts 1..15 of the first ToR of CHECKOUT/simulation/mix/fat.txt send 4 MB
each to host 0 on the same ToR at 2.0 s (RUNS/flows.txt). Two cases:

- ``ecn_off``: the reference with ``ENABLE_QCN 0``, lbsim with
  ``rdma.ecn_kmin_bytes = rdma.ecn_kmax_bytes = 100000000`` (no queue gets
  near it), so only PFC holds the 15:1 overload;
- ``dcqcn_on``: both at their DCQCN defaults (``run.py --cc dcqcn --bw
  100``; examples/rdma_dcqcn.toml).

The reference runs through bench/hpcc/hpcc_run.py into RUNS/CASE/hpcc and is
summarised by fct_stats.py (PFC frames received and paused port-time from
its pfc.txt); lbsim runs examples/rdma_dcqcn.toml on the same files into
RUNS/CASE/lbsim, as bench/hpcc/compare.py runs it, and its PFC numbers come
from summary.json. Slowdown = FCT / standalone FCT from each fct.txt, the
median and the maximum over the 15 flows. ``--record`` writes both cases as
JSON with the command, date, lbsim commit, machine and the reference's commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "bench")]
import compare  # noqa: E402  (bench/hpcc/compare.py, beside this file)
from measure import machine, repo_commit  # noqa: E402

fct_stats = compare.fct_stats

SENDERS = range(1, 16)
RECEIVER = 0
SIZE_B = 4_000_000
START_S = 2.0
ECN_OFF_BYTES = 100_000_000
#: case -> (the reference's config overrides, lbsim's --set overrides)
CASES = {
    "ecn_off": (["ENABLE_QCN=0"], [f"rdma.ecn_kmin_bytes={ECN_OFF_BYTES}", f"rdma.ecn_kmax_bytes={ECN_OFF_BYTES}"]),
    "dcqcn_on": ([], []),
}


def write_flows(path: Path) -> None:
    """The incast in the reference's flow-file format."""
    lines = [f"{s} {RECEIVER} 3 100 {SIZE_B} {START_S}" for s in SENDERS]
    path.write_text(f"{len(lines)}\n" + "\n".join(lines) + "\n")


def slowdowns(fct: Path) -> dict:
    """Median and maximum slowdown of the flows in an fct.txt, clamped at 1
    as fct_stats.py does."""
    rows = fct_stats.read_fct(fct)
    if len(rows) != len(SENDERS):
        sys.exit(f"{fct}: {len(rows)} flows completed, expected {len(SENDERS)}")
    s = sorted(max(1.0, r.slowdown) for r in rows)
    return {"slowdown_median": round(fct_stats.pctl(s, 0.5), 3), "slowdown_max": round(s[-1], 3)}


def run_hpcc(checkout: Path, topo: Path, flows: Path, out: Path, sets: list[str]) -> tuple[dict, str]:
    """The reference on the incast: its PFC frames and slowdowns, and its
    commit."""
    cmd = [sys.executable, str(HERE / "hpcc_run.py"), "--hpcc", str(checkout), "--topo", str(topo), "--flows", str(flows),
           "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"the HPCC run failed; see {out}")
    time = json.loads((out / "time.json").read_text())
    pfc = fct_stats.pfc_summary(out / "pfc.txt") if (out / "pfc.txt").exists() else {
        "switch": {"pause": 0, "resume": 0}, "host": {"pause": 0, "resume": 0}, "ports_paused": 0, "paused_port_time_ns": 0}
    side = {
        "pause_frames_received_by_hosts": pfc["host"]["pause"],
        "resume_frames_received_by_hosts": pfc["host"]["resume"],
        "pause_frames_received_by_switches": pfc["switch"]["pause"],
        "ports_paused": pfc["ports_paused"],
        "paused_port_time_us": round(pfc["paused_port_time_ns"] / 1e3, 1),
        **slowdowns(out / "fct.txt"),
    }
    return side, time["hpcc_commit"]


def run_lbsim(topo: Path, flows: Path, out: Path, sets: list[str]) -> dict:
    """lbsim on the incast: its PFC frames, paused time and slowdowns."""
    compare.run_lbsim(topo, flows, out, ROOT / "examples" / "rdma_dcqcn.toml", sets)
    r = json.loads((out / "summary.json").read_text())["rdma"]
    return {
        "pause_frames": r["pause_frames"],
        "resume_frames": r["resume_frames"],
        "host_paused_us": round(r["host_paused_ms"] * 1e3, 1),
        "switch_port_paused_us": round(r["switch_port_paused_ms"] * 1e3, 1),
        "ingress_drops": r["ingress_drops"],
        "cnps": r["cnps"],
        **slowdowns(out / "fct.txt"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hpcc", type=Path, required=True, help="an HPCC checkout, built with bench/hpcc/build.sh")
    ap.add_argument("--out", type=Path, required=True, help="directory for the flow file and the four runs")
    ap.add_argument("--record", type=Path, help="write both cases as JSON here")
    args = ap.parse_args()
    lbsim = shutil.which("lbsim") or sys.exit("lbsim is not installed (pip install .)")

    args.out.mkdir(parents=True, exist_ok=True)
    topo, flows = args.out / "fat.txt", args.out / "flows.txt"
    shutil.copyfile(args.hpcc / "simulation" / "mix" / "fat.txt", topo)
    write_flows(flows)
    record: dict = {}
    hpcc_commit = None
    for case, (hpcc_sets, lbsim_sets) in CASES.items():
        h, hpcc_commit = run_hpcc(args.hpcc, topo, flows, args.out / case / "hpcc", hpcc_sets)
        lb = run_lbsim(topo, flows, args.out / case / "lbsim", lbsim_sets)
        record[case] = {"hpcc": h, "lbsim": lb}
        print(f"{case}: hpcc {h}\n{' ' * len(case)}  lbsim {lb}")

    if args.record:
        record = {
            "date": datetime.date.today().isoformat(),
            # paths by role, not this machine's
            "command": f"python3 bench/hpcc/incast.py --hpcc CHECKOUT --out RUNS --record bench/results/{args.record.name}",
            "commit": repo_commit(),
            "lbsim_version": subprocess.run([lbsim, "--version"], capture_output=True, text=True).stdout.strip(),
            "machine": machine(),
            "hpcc_commit": hpcc_commit,
            "what": (f"PFC against the HPCC simulator: hosts 1..15 of one ToR of mix/fat.txt send {SIZE_B:,} B each to host "
                     f"{RECEIVER} (same ToR) at {START_S} s; ecn_off: HPCC ENABLE_QCN 0, lbsim rdma.ecn_kmin_bytes = "
                     f"rdma.ecn_kmax_bytes = {ECN_OFF_BYTES}, so only PFC holds the 15:1 overload; dcqcn_on: both at "
                     "their DCQCN defaults"),
            "flows": f"15 lines `s {RECEIVER} 3 100 {SIZE_B} {START_S}`, s = 1..15",
            "commands": {
                case: {
                    "hpcc": "python3 bench/hpcc/hpcc_run.py --hpcc CHECKOUT --topo RUNS/fat.txt --flows RUNS/flows.txt "
                            f"--out RUNS/{case}/hpcc" + "".join(f" --set {s}" for s in hs),
                    "lbsim": "lbsim run examples/rdma_dcqcn.toml --set topology.kind=hpcc --set topology.file=RUNS/fat.txt "
                             "--set workload.kind=hpcc --set workload.file=RUNS/flows.txt"
                             + "".join(f" --set {s}" for s in ls) + f" --out RUNS/{case}/lbsim --force",
                }
                for case, (hs, ls) in CASES.items()
            },
            **record,
        }
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
