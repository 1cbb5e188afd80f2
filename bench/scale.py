#!/usr/bin/env python3
"""Scale benchmark: wall time (with the setup's share: topology,
routes, scheme tables), events/s and packets/s of the run loop, and peak
RSS of `lbsim-run` on fabrics from 32 to 3,456 hosts, for one or more
builds side by side in one invocation.

    python3 bench/scale.py                        # this tree's release build
    python3 bench/scale.py --old-rev 3d804a5      # + that commit, built in a worktree
    python3 bench/scale.py --bin old=OLD/lbsim-run --bin new=target/release/lbsim-run --only k8,b1 --repeat 3
    python3 bench/scale.py --repeat 2 --record bench/results/scale_DATE.json   # the standings README quotes

`wall s` is the whole process timed from outside; `setup s` is its share
before the first event (scenario, topology, routes, scheme tables) as the
run reports it (`setup_wall_s`); events/s and packets/s are of the run loop
alone. `small` and the long rows run only when named with `--only`.

Each (scenario, build) pair runs `--repeat` times, builds interleaved
(A B A B ...) so that drift in the machine's speed hits both alike; the
table shows the fastest wall time and the largest peak RSS. Results must be
identical between builds: the events count, the FCT statistics and
`flows_digest` (a hash of every per-flow record, printed by lbsim-run since
2026-11-24) are compared; with a build older than the digest only the first
two can be, and the table says "(identical; no digest)".
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from measure import machine, repo_commit, run_timed  # noqa: E402

SCENARIOS = {
    # name: (scenario file, overrides, what it is)
    "small": ("examples/small.toml", [], "32 hosts, 2,000 web-search flows (the README's first command)"),
    "b1": ("examples/b1.toml", [], "B1: 32 hosts, 2x2 leaf-spine, 5,000 web-search flows"),
    "k8": ("bench/scale/k8_ws10000.toml", [], "k=8 fat-tree (128 hosts), 10,000 web-search flows (ws_10000.csv)"),
    "k16": ("bench/scale/k16_1mb.toml", [], "k=16 fat-tree (1,024 hosts), 2,000 x 1 MB, letflow"),
    "k16x10": ("bench/scale/k16_1mb.toml", ["workload.flows=20000"], "k=16 fat-tree, 20,000 x 1 MB, letflow"),
    "k24": ("bench/scale/k24_1mb.toml", [], "k=24 fat-tree (3,456 hosts), 2,000 x 1 MB, letflow"),
    "k8ar": ("bench/scale/k8_allreduce.toml", [], "k=8 fat-tree, 64-rank ring all-reduce, 10 x 256 MB (long; compare its events/s with k8)"),
    "k8ar_small": ("bench/scale/k8_allreduce.toml", ["jobs=[{ranks=64, placement=\"spread\", size_bytes=8388608, iterations=2}]"],
                   "k=8 fat-tree, 64-rank ring all-reduce, 2 x 8 MB"),
    "small1m": ("examples/small.toml", ["workload.flows=1000000"], "32 hosts, 10^6 web-search flows (long)"),
}
DEFAULT = ["b1", "k8", "k16", "k24"]


def build_rev(rev: str) -> Path:
    """Builds lbsim-run at `rev` in its own worktree and returns the binary."""
    wt = Path(f"/tmp/lbsim-bench-{rev}")
    if not wt.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), rev], check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "lbsim-sim"], cwd=wt, check=True)
    return wt / "target/release/lbsim-run"


def run_measured(binary: Path, scenario: str, overrides: list[str]) -> dict:
    """One run with its own wall time and peak RSS."""
    out, wall, rss = run_timed([str(binary), str(ROOT / scenario), *overrides])
    return {"wall_s": wall, "rss_mb": rss, "summary": json.loads(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", default=[], metavar="NAME=PATH", help="a build to measure (repeatable)")
    ap.add_argument("--old-rev", help="also build and measure this git revision")
    ap.add_argument("--only", help=f"comma-separated scenarios (default {','.join(DEFAULT)}; all: {','.join(SCENARIOS)})")
    ap.add_argument("--repeat", type=int, default=1, help="runs per (scenario, build); the fastest is shown")
    ap.add_argument("--json", help="also write every run's numbers here")
    ap.add_argument("--record", type=Path, help="write the table as a dated record (date, commit, machine, command; bench/results/)")
    a = ap.parse_args()

    bins: list[tuple[str, Path]] = []
    if a.old_rev:
        bins.append((f"old {a.old_rev}", build_rev(a.old_rev)))
    for b in a.bin:
        name, _, path = b.partition("=")
        if not path:
            raise SystemExit(f"--bin {b}: expected NAME=PATH")
        bins.append((name, Path(path)))
    if not a.bin:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "lbsim-sim"], cwd=ROOT, check=True)
        bins.append(("new (this tree)", ROOT / "target/release/lbsim-run"))
    names = a.only.split(",") if a.only else DEFAULT
    for n in names:
        if n not in SCENARIOS:
            raise SystemExit(f"--only: unknown scenario {n!r}; choose from {', '.join(SCENARIOS)}")

    mach = machine()
    print(f"# machine: {mach['cores']} CPUs, {mach['cpu']}; {datetime.datetime.now():%Y-%m-%d %H:%M}", flush=True)
    print("| scenario | build | wall s | setup s | events | M events/s | M pkts/s | peak RSS MB | mean FCT us | flows_digest |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    records, rows = [], []
    for n in names:
        scen, ov, _ = SCENARIOS[n]
        best: dict[str, dict] = {}
        for _ in range(a.repeat):
            for bname, path in bins:
                r = run_measured(path, scen, ov)
                records.append({"scenario": n, "build": bname, **{k: v for k, v in r.items() if k != "summary"},
                                "events": r["summary"]["events"]})
                b = best.get(bname)
                if b is None or r["wall_s"] < b["wall_s"]:
                    r["rss_mb"] = max(r["rss_mb"], b["rss_mb"]) if b else r["rss_mb"]
                    best[bname] = r
                else:
                    b["rss_mb"] = max(b["rss_mb"], r["rss_mb"])
        ref = None
        for bname, _ in bins:
            r = best[bname]
            s = r["summary"]
            ev, pk = s["events"], s["network"]["packets_sent"]
            sim_wall = s["wall_s"]  # the run loop alone (no setup, no output)
            key = (ev, s.get("flows_digest"), json.dumps(s["fct_us"], sort_keys=True))
            if ref is None:
                same = ""
            elif key[0] != ref[0] or key[2] != ref[2] or (None not in (key[1], ref[1]) and key[1] != ref[1]):
                same = " (DIFFERENT)"
            else:
                same = " (identical)" if None not in (key[1], ref[1]) else " (identical; no digest)"

            ref = ref or key
            setup = s.get("setup_wall_s")
            setup = f"{setup:.2f}" if setup is not None else "-"
            rows.append({"scenario": n, "what": SCENARIOS[n][2], "build": bname, "wall_s": round(r["wall_s"], 3),
                         "setup_s": s.get("setup_wall_s"), "events": ev, "events_per_s": ev / sim_wall,
                         "packets_per_s": pk / sim_wall, "peak_rss_mb": round(r["rss_mb"], 1), "mean_fct_us": s["fct_us"]["mean"],
                         "flows_digest": s.get("flows_digest"), "same_as_first_build": same.strip(" ()") or None})
            print(f"| {n} | {bname} | {r['wall_s']:.2f} | {setup} | {ev:,} | {ev / sim_wall / 1e6:.2f} | {pk / sim_wall / 1e6:.2f} | "
                  f"{r['rss_mb']:.0f} | {s['fct_us']['mean']:.1f} | {s.get('flows_digest', '-')}{same} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=1))
    if a.record:
        builds = {name: repo_commit() if path == ROOT / "target/release/lbsim-run" else path.name for name, path in bins}
        rec = {"date": datetime.date.today().isoformat(), "commit": repo_commit(), "machine": machine(),
               "command": " ".join(["python3 bench/scale.py", *(Path(x).name if "/" in x else x for x in sys.argv[1:])]),
               "repeat": a.repeat, "builds": builds, "rows": rows}
        a.record.write_text(json.dumps(rec, indent=2) + "\n")
        print(f"wrote {a.record}")


if __name__ == "__main__":
    main()
