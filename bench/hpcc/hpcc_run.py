#!/usr/bin/env python3
"""Run the HPCC project's ns-3 simulator on one topology and flow file, timed.

    python3 bench/hpcc/hpcc_run.py --hpcc CHECKOUT --topo TOPO.txt --flows FLOWS.txt --out RUNDIR [--cc dcqcn] [--bw 100]

CHECKOUT is a clone of github alibaba-edu/High-Precision-Congestion-Control
built with bench/hpcc/build.sh. The script

1. copies the topology and flow file to RUNDIR/topo.txt and RUNDIR/flows.txt
   and writes an empty trace-node list RUNDIR/trace.txt (packet tracing is
   off in every preset, ENABLE_TRACE 0);
2. writes RUNDIR/config.txt with the project's own simulation/run.py: it is
   executed under Python 2 with `--cc CC --bw BW` in a scratch directory,
   with os.system replaced so it only writes its config and does not start
   waf. Then every path in that config is pointed into RUNDIR (fct.txt,
   pfc.txt, qlen.txt, mix.tr) and QLEN_MON_END is set to QLEN_MON_START
   (--qlen-mon-end changes it): the queue monitor samples every switch port
   every 100 ns over [QLEN_MON_START, QLEN_MON_END], 10^7 extra events for
   run.py's one-second window, and changes no other output. --set KEY=VALUE
   overrides or adds further keys;
3. runs simulation/build/scratch/third RUNDIR/config.txt from the checkout's
   simulation/ directory, under `nice` and `/usr/bin/time -v`; its stdout and
   stderr go to RUNDIR/stdout.txt and RUNDIR/stderr.txt;
4. writes RUNDIR/time.json: wall time, user + system CPU time and peak RSS
   (from /usr/bin/time), exit status, the command, the checkout's commit and
   the number of flows given and completed.

--config-only stops after step 2. Python 2 is PY2 in the environment or
--py2, default /root/.pyenv/versions/2.7.18/bin/python.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from measure import parse_time_v  # noqa: E402

DEFAULT_PY2 = "/root/.pyenv/versions/2.7.18/bin/python"

# config key -> file name inside RUNDIR
PATH_KEYS = {
    "TOPOLOGY_FILE": "topo.txt",
    "FLOW_FILE": "flows.txt",
    "TRACE_FILE": "trace.txt",
    "TRACE_OUTPUT_FILE": "mix.tr",
    "FCT_OUTPUT_FILE": "fct.txt",
    "PFC_OUTPUT_FILE": "pfc.txt",
    "QLEN_MON_FILE": "qlen.txt",
}

# Runs simulation/run.py with os.system stubbed out; argv: run.py path, then run.py's arguments.
RUNPY_STUB = r"""
import os, sys
runpy = sys.argv[1]
os.system = lambda cmd: sys.stdout.write("run.py would run (skipped): %s\n" % cmd)
sys.argv = ["run.py"] + sys.argv[2:]
execfile(runpy)
"""


def runpy_config(checkout: Path, py2: str, cc: str, bw: int) -> list[tuple[str, str]]:
    """(key, value) lines of the config that run.py writes for `--cc cc --bw bw`."""
    runpy = checkout / "simulation" / "run.py"
    if not runpy.is_file():
        raise SystemExit(f"--hpcc {checkout}: {runpy} not found")
    with tempfile.TemporaryDirectory(prefix="hpcc-runpy-") as tmp:
        (Path(tmp) / "mix").mkdir()
        cmd = [py2, "-c", RUNPY_STUB, str(runpy), "--cc", cc, "--bw", str(bw), "--topo", "topo", "--trace", "flows"]
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        written = sorted((Path(tmp) / "mix").glob("config_*.txt"))
        if done.returncode != 0 or len(written) != 1:
            raise SystemExit(f"run.py --cc {cc} --bw {bw} wrote no config (exit {done.returncode}): {(done.stdout + done.stderr).strip()}")
        text = written[0].read_text()
    pairs = []
    for line in text.splitlines():
        if line.strip():
            key, _, value = line.strip().partition(" ")
            pairs.append((key, value.strip()))
    return pairs


def count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def git_commit(checkout: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hpcc", type=Path, required=True, help="the HPCC repository checkout (built with build.sh)")
    ap.add_argument("--topo", type=Path, required=True, help="HPCC topology file")
    ap.add_argument("--flows", type=Path, required=True, help="HPCC flow file (sorted by start time)")
    ap.add_argument("--out", type=Path, required=True, help="run directory (created)")
    ap.add_argument("--cc", default="dcqcn", help="run.py's --cc preset (default dcqcn)")
    ap.add_argument("--bw", type=int, default=100, help="run.py's --bw, host NIC rate in Gb/s (default 100)")
    ap.add_argument("--qlen-mon-end", type=int, help="QLEN_MON_END in ns (default: QLEN_MON_START, a single sample)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override or add a config key")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the simulator process (default 10)")
    ap.add_argument("--py2", default=os.environ.get("PY2", DEFAULT_PY2), help="Python 2 for run.py")
    ap.add_argument("--config-only", action="store_true", help="write RUNDIR/config.txt and stop")
    args = ap.parse_args()

    checkout = args.hpcc.resolve()
    sim_dir = checkout / "simulation"
    binary = sim_dir / "build" / "scratch" / "third"
    out = args.out.resolve()
    if any(c.isspace() for c in str(out)):
        ap.error(f"--out {out}: the simulator's config cannot hold a path with spaces")
    out.mkdir(parents=True, exist_ok=True)
    for src, name in ((args.topo, "topo.txt"), (args.flows, "flows.txt")):
        if src.resolve() != out / name:
            shutil.copyfile(src, out / name)
    (out / "trace.txt").write_text("0\n")

    config = runpy_config(checkout, args.py2, args.cc, args.bw)
    keys = [k for k, _ in config]
    values = dict(config)
    for key, name in PATH_KEYS.items():
        if key not in values:
            raise SystemExit(f"run.py's config has no {key}")
        values[key] = str(out / name)
    values["QLEN_MON_END"] = str(args.qlen_mon_end if args.qlen_mon_end is not None else values["QLEN_MON_START"])
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--set {item!r}: expected KEY=VALUE")
        if key not in values:
            keys.append(key)
        values[key] = value
    (out / "config.txt").write_text("".join(f"{k} {values[k]}\n" for k in keys))
    print(f"config written to {out / 'config.txt'}", file=sys.stderr)
    if args.config_only:
        return 0

    if not os.access(binary, os.X_OK):
        raise SystemExit(f"--hpcc {checkout}: {binary} not built (run bench/hpcc/build.sh {checkout})")
    env = dict(os.environ, LD_LIBRARY_PATH=str(sim_dir / "build"))
    cmd = ["nice", "-n", str(args.nice), "/usr/bin/time", "-v", "-o", str(out / "time.txt"), str(binary), str(out / "config.txt")]
    started = datetime.datetime.now(datetime.timezone.utc)
    with open(out / "stdout.txt", "w") as so, open(out / "stderr.txt", "w") as se:
        rc = subprocess.run(cmd, cwd=sim_dir, env=env, stdout=so, stderr=se).returncode
    record = {
        "started_utc": started.isoformat(timespec="seconds"),
        "command": " ".join(cmd),
        "cwd": str(sim_dir),
        "hpcc_commit": git_commit(checkout),
        "cc": args.cc,
        "bw_gbps": args.bw,
        "flows": count_lines(out / "flows.txt") - 1,
        "completed": count_lines(out / "fct.txt"),
    }
    try:
        record |= parse_time_v((out / "time.txt").read_text())
    except (OSError, ValueError) as e:
        record["time_error"] = str(e)
    record["returncode"] = rc
    (out / "time.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    if rc != 0:
        print(f"simulator exited with status {rc}; see {out / 'stderr.txt'}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
