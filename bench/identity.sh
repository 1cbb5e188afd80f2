#!/usr/bin/env bash
# Do two lbsim-run builds give identical results? Runs both on 27 scenarios
# (the eight examples cut short, the 17 schemes on the Clove testbed with a
# link failing at 2 ms, the k = 8 fat-tree's first 20 ms, k = 16 with 100
# flows) and compares the events count and `flows_digest` (a hash of every
# per-flow record). Exits non-zero if any differ.
#
#   bash bench/identity.sh OLD_BIN NEW_BIN
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: bash bench/identity.sh OLD_BIN NEW_BIN" >&2
  exit 2
fi
A=$1; B=$2
cd "$(dirname "$0")/.."
runs=()
for ex in b1:workload.flows=300 small:workload.flows=300 clove_testbed:workload.flows=200 conga_testbed:workload.flows=200 \
  expeditus_stress:workload.flows=20 explicit_asymmetric:workload.flows=200 fat_tree_dctcp:workload.flows=200 incast:; do
  runs+=("examples/${ex%%:*}.toml ${ex#*:}")
done
for s in ecmp spray letflow drill ag hula conga conga_flow expeditus clairvoyant edge_flowlet clove_ecn clove_int vms hermes presto mptcp; do
  runs+=("examples/clove_testbed.toml workload.flows=150 lb.scheme=\"$s\" failures=[{link=\"L1-S1#0\",at_ms=2.0}]")
done
runs+=("bench/scale/k8_ws10000.toml run.stop_ms=20")
runs+=("bench/scale/k16_1mb.toml workload.flows=100")
key='import json,sys; d=json.load(sys.stdin); print(d["events"], d.get("flows_digest", "-"))'
bad=0
for r in "${runs[@]}"; do
  # word splitting of $r is intended: one scenario file and its key=value sets
  a=$($A $r 2>&1 | python3 -c "$key" 2>&1)
  b=$($B $r 2>&1 | python3 -c "$key" 2>&1)
  if [ "$a" == "$b" ]; then echo "same  $a  $r"; else echo "DIFF  $a | $b  $r"; bad=$((bad + 1)); fi
done
echo "differing: $bad of ${#runs[@]}"
[ "$bad" = 0 ]
