#!/bin/bash
# Paired wall-clock comparison of two lbsim-run builds on a noisy VM: both
# run at the same time, one per core (swapping cores each round), so drift
# in the machine's speed hits both alike. Prints each round's events/s and
# the ratio B/A, then the geometric mean of the ratios; fails if a build
# fails or the two builds' events count or flows_digest differ.
#
#   bash bench/pair.sh OLD_BIN NEW_BIN ROUNDS SCENARIO [key=value ...]
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: bash bench/pair.sh OLD_BIN NEW_BIN ROUNDS SCENARIO [key=value ...]" >&2
  exit 2
fi
A=$1; B=$2; reps=$3; shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$reps"); do
  if [ $((i % 2)) = 0 ]; then ca=0; cb=1; else ca=1; cb=0; fi
  taskset -c $ca "$A" "$@" > "$tmp/a.json" &
  pa=$!
  taskset -c $cb "$B" "$@" > "$tmp/b.json"
  wait "$pa"
  python3 - "$tmp" <<'PY'
import json, sys
a = json.load(open(sys.argv[1] + "/a.json")); b = json.load(open(sys.argv[1] + "/b.json"))
if a["events"] != b["events"] or a.get("flows_digest") != b.get("flows_digest"):
    sys.exit(f"results differ: events {a['events']} vs {b['events']}, digest {a.get('flows_digest')} vs {b.get('flows_digest')}")
print(f"{a['events_per_s'] / 1e6:.3f} {b['events_per_s'] / 1e6:.3f} M events/s  ratio {b['events_per_s'] / a['events_per_s']:.3f}")
PY
done > "$tmp/rounds"
cat "$tmp/rounds"
awk '{s += log($6); n++} END {if (n) printf "geometric mean ratio %.3f over %d rounds\n", exp(s / n), n}' "$tmp/rounds"
