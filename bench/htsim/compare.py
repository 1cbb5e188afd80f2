#!/usr/bin/env python3
"""lbsim against htsim on the k = 8 fat-tree's 10,000 web-search flows.

Writes bench/htsim/ws_10000_segments.csv (bench/scale/ws_10000.csv with
every size rounded up to whole 1,460-byte segments, as htsim sends them),
runs bench/htsim/k8.toml on it and, given htsim's per-flow results
(`--htsim-flows flows.txt`: one line per flow, `id src dst size start_us
finish_us fct_us data_pkts_sent retransmits timeouts fast_recoveries`, id
= the flow list's `cm_id`), prints both side by side: totals, and split by
flow size and by whether a flow timed out in either simulator.

    python bench/htsim/compare.py --htsim-flows PATH/flows.txt
    python bench/htsim/compare.py --set network.host_nic=backpressure --set network.host_buffer_pkts=100
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import pandas as pd

import lbsim

HERE = Path(__file__).resolve().parent
MSS = 1460


def segment_list() -> Path:
    src = HERE.parent / "scale" / "ws_10000.csv"
    out = HERE / "ws_10000_segments.csv"
    with open(src) as f, open(out, "w", newline="") as g:
        w = csv.writer(g)
        w.writerow(["src", "dst", "size_bytes", "start_us", "cm_id"])
        for r in csv.DictReader(f):
            w.writerow([r["src"], r["dst"], math.ceil(int(r["size_bytes"]) / MSS) * MSS, r["start_us"], r["cm_id"]])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--htsim-flows", type=Path, help="htsim's per-flow results (flows.txt)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="scenario override")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    flows = pd.read_csv(segment_list())
    r = lbsim.run(HERE / "k8.toml", seed=a.seed, set=a.set)
    s, f = r.summary, r.flows
    f["cm_id"] = flows["cm_id"].values
    t = s["transport"]
    print(f"lbsim: drops {s['network']['drops']['total']:,} (to hosts {s['network']['drops']['queue_at']['switch_to_host']:,}), "
          f"retransmits {t['retransmits']:,}, timeouts {t['timeouts']:,}, fast recoveries {t['fast_recoveries']:,}, "
          f"mean FCT {s['fct_us']['mean'] / 1e3:.1f} ms, p50 {s['fct_us']['p50'] / 1e3:.3f} ms, "
          f"duplicate segments at receivers {int(f['duplicate_segments'].sum()):,}")
    if a.htsim_flows is None:
        return
    cols = "id src dst size start_us finish_us fct_us data_pkts_sent retransmits timeouts fast_recoveries".split()
    h = pd.read_csv(a.htsim_flows, sep=" ", comment="#", header=None, names=cols)
    m = f.merge(h, left_on="cm_id", right_on="id", suffixes=("", "_h"))
    if len(m) != len(f):
        raise SystemExit(f"--htsim-flows: {len(m)} of {len(f)} flows matched by id")
    keys = ["retransmits", "timeouts", "fast_recoveries"]

    def row(name: str, x: pd.DataFrame) -> None:
        cells = [f"{int(x[k].sum()):,} / {int(x[k + '_h'].sum()):,}" for k in keys]
        print(f"| {name} | {len(x):,} | " + " | ".join(cells) + f" | {x['fct_us'].mean() / 1e3:.1f} / {x['fct_us_h'].mean() / 1e3:.1f} |")

    print("\n| flows | n | retransmits (lbsim / htsim) | timeouts | fast recoveries | mean FCT ms |")
    print("|---|---|---|---|---|---|")
    row("all", m)
    for lo, hi, name in [(0, 1e5, "< 100 KB"), (1e5, 1e7, "100 KB-10 MB"), (1e7, math.inf, "> 10 MB")]:
        row(name, m[(m["size_bytes"] >= lo) & (m["size_bytes"] < hi)])
    lt, ht = m["timeouts"] > 0, m["timeouts_h"] > 0
    row("no timeout in either", m[~lt & ~ht])
    row("timeout in lbsim only", m[lt & ~ht])
    row("timeout in htsim only", m[~lt & ht])
    row("timeout in both", m[lt & ht])


if __name__ == "__main__":
    main()
