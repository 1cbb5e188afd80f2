#!/bin/bash
# The HPCC reference runs: build the simulator, take its 320-host fat-tree
# (simulation/mix/fat.txt), write web-search flows at 30 % (10 ms) and 50 %
# (6 ms) load with seed 1, run DCQCN at 100G on both and summarise them.
#
#   bash bench/hpcc/reference.sh CHECKOUT RUNS [RECORD.json]
#
# CHECKOUT: a clone of github alibaba-edu/High-Precision-Congestion-Control.
# RUNS gets fat.txt, flows_ws{30,50}.txt and the run directories ws30/, ws50/
# (each with config.txt, fct.txt, pfc.txt, stdout.txt, time.json, stats.json).
# RECORD.json (optional) gets one JSON record of both runs: commands, this
# repository's and the HPCC commit, the machine (bench/measure.py),
# time/memory and slowdown/PFC summaries. Each run is about ten minutes of
# CPU; set RUN_PREFIX to wrap the runs (e.g. in a lock). A run directory
# that finished on the same flow file is kept, not run again.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 CHECKOUT RUNS [RECORD.json]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
CHECKOUT=$(cd "$1" && pwd)
mkdir -p "$2"
RUNS=$(cd "$2" && pwd)
RECORD=${3:-}
read -r -a PREFIX <<< "${RUN_PREFIX:-}"

bash "$HERE/build.sh" "$CHECKOUT"
cp "$CHECKOUT/simulation/mix/fat.txt" "$RUNS/fat.txt"
for spec in "30 10" "50 6"; do
    set -- $spec
    LOAD=$1 MS=$2
    python3 "$HERE/flows.py" --topo "$RUNS/fat.txt" --load "0.$LOAD" --duration-ms "$MS" --seed 1 --out "$RUNS/flows_ws$LOAD.txt"
    if cmp -s "$RUNS/flows_ws$LOAD.txt" "$RUNS/ws$LOAD/flows.txt" && grep -q '"returncode": 0' "$RUNS/ws$LOAD/time.json" 2>/dev/null; then
        echo "ws$LOAD: finished run on the same flows kept ($RUNS/ws$LOAD)" >&2
    else
        "${PREFIX[@]}" python3 "$HERE/hpcc_run.py" --hpcc "$CHECKOUT" --topo "$RUNS/fat.txt" --flows "$RUNS/flows_ws$LOAD.txt" \
            --out "$RUNS/ws$LOAD" --cc dcqcn --bw 100
    fi
    python3 "$HERE/fct_stats.py" "$RUNS/ws$LOAD" --json "$RUNS/ws$LOAD/stats.json"
done

if [ -n "$RECORD" ]; then
    python3 - "$CHECKOUT" "$RUNS" "$RECORD" "$HERE/.." <<'PYEOF'
import datetime, json, subprocess, sys
from pathlib import Path

checkout, runs, record = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from measure import machine, repo_commit


def local(text):
    return text.replace(str(runs), "RUNS").replace(checkout, "CHECKOUT")


gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
out = {
    "date": datetime.date.today().isoformat(),
    "command": "bash bench/hpcc/reference.sh CHECKOUT RUNS " + (f"bench/results/{record.name}" if record.parent.name == "results" else "RECORD.json"),
    "commit": repo_commit(),
    "hpcc_repository": "github alibaba-edu/High-Precision-Congestion-Control",
    "hpcc_commit": subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "machine": machine() | {"compiler": gxx},
    "build_command": "bash bench/hpcc/build.sh CHECKOUT",
    "topology": "CHECKOUT/simulation/mix/fat.txt: 320 hosts at 100 Gb/s, 20 ToRs, 400 Gb/s fabric, 1 us links",
    "reproduce": "bash bench/hpcc/reference.sh CHECKOUT RUNS RECORD.json",
    "runs": {},
}
for name, load, ms in (("ws30", 0.3, 10), ("ws50", 0.5, 6)):
    d = runs / name
    t = json.loads((d / "time.json").read_text())
    t["command"], t["cwd"] = local(t["command"]), local(t["cwd"])
    stats = json.loads((d / "stats.json").read_text())
    stats["fct_file"] = local(stats["fct_file"])
    out["runs"][name] = {
        "workload": f"web search, load {load} of the host links, {ms} ms of Poisson arrivals from 2 s, seed 1",
        "flows_command": f"python3 bench/hpcc/flows.py --topo RUNS/fat.txt --load {load} --duration-ms {ms} --seed 1 --out RUNS/flows_{name}.txt",
        "run_command": f"python3 bench/hpcc/hpcc_run.py --hpcc CHECKOUT --topo RUNS/fat.txt --flows RUNS/flows_{name}.txt --out RUNS/{name} --cc dcqcn --bw 100",
        "stats_command": f"python3 bench/hpcc/fct_stats.py RUNS/{name} --json RUNS/{name}/stats.json",
        "time": t,
        "stats": stats,
    }
record.parent.mkdir(parents=True, exist_ok=True)
record.write_text(json.dumps(out, indent=1) + "\n")
PYEOF
    echo "record written to $RECORD"
fi
