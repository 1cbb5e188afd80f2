#!/usr/bin/env bash
# Runs every full reproduction sweep (not --quick) in report order with two
# local workers, then regenerates REPRODUCTION.md. Hours on a 2-core machine;
# finished runs are kept in results/ and skipped on a rerun.
set -u
cd "$(dirname "$0")/.."
for name in ${@:-clove_fig8 conga_fig11 conga_fig9 conga_fig10 clove_fig4 conga_fig15 clove_fig6 clove_fig7 conga_fig13}; do
  echo "=== $name $(date -u +%H:%M:%S)"
  python3 -m lbsim.cli reproduce "$name" --workers 2 || echo "!!! $name failed"
done
echo "=== done $(date -u +%H:%M:%S)"
