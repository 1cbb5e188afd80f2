#!/usr/bin/env python3
"""Summarise an HPCC simulator run: slowdown per flow-size bucket and PFC frame counts.

fct.txt has one line per completed flow,
`sip dip sport dport size_B start_ns fct_ns standalone_fct_ns`, addresses in
hex (node id = (ip >> 8) & 0xffff). Slowdown = fct / standalone fct, clamped
below at 1 as the HPCC project's analysis does (its standalone FCT is an
approximation, so some flows come out below 1); the unclamped mean and the
share of flows below 1 are reported beside it. Percentiles follow that
analysis too: the value at index int(n * p) of the sorted list.

pfc.txt has one line per PFC frame received,
`time_ns node node_type ifindex type` (node_type 0 host, 1 switch; type 1
PAUSE, 0 RESUME). Paused time pairs each port's first PAUSE with the next
RESUME; a port still paused at its last line counts until that port's last
frame.

With --flows (the run's flow file) the flows that never completed are
counted: the simulator numbers source ports per (src, dst) pair from 10000 in
flow-file order, which identifies each flow of the file in fct.txt.

    python3 bench/hpcc/fct_stats.py RUNDIR                  # RUNDIR/fct.txt, pfc.txt, flows.txt
    python3 bench/hpcc/fct_stats.py --fct F --pfc P [--flows FLOWS] [--json OUT|-]
"""

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

# (name, lowest size included, first size excluded), sizes in bytes, KB = 1000 B
BUCKETS = [
    ("<10KB", 0, 10_000),
    ("10-100KB", 10_000, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">1MB", 1_000_000, math.inf),
    ("all", 0, math.inf),
]


@dataclass(frozen=True)
class Fct:
    src: int
    dst: int
    sport: int
    dport: int
    size: int
    start_ns: int
    fct_ns: int
    standalone_ns: int

    @property
    def slowdown(self) -> float:
        return self.fct_ns / self.standalone_ns


def ip_to_node(ip_hex: str) -> int:
    return (int(ip_hex, 16) >> 8) & 0xFFFF


def read_fct(path: Path) -> list[Fct]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 8:
            raise ValueError(f"{path}:{n}: expected 8 fields, got {len(f)}")
        rows.append(Fct(ip_to_node(f[0]), ip_to_node(f[1]), *(int(x) for x in f[2:])))
    return rows


def pctl(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def slowdown_table(rows: list[Fct]) -> list[dict]:
    out = []
    for name, lo, hi in BUCKETS:
        raw = [r.slowdown for r in rows if lo <= r.size < hi]
        entry: dict = {"bucket": name, "count": len(raw)}
        if raw:
            clamped = sorted(max(1.0, s) for s in raw)
            entry |= {
                "median": pctl(clamped, 0.5),
                "p95": pctl(clamped, 0.95),
                "p99": pctl(clamped, 0.99),
                "mean": sum(clamped) / len(clamped),
                "mean_unclamped": sum(raw) / len(raw),
                "below_1": sum(s < 1 for s in raw) / len(raw),
            }
        out.append(entry)
    return out


def pfc_summary(path: Path) -> dict:
    counts = {"switch": {"pause": 0, "resume": 0}, "host": {"pause": 0, "resume": 0}}
    paused_since: dict[tuple[int, int], int] = {}
    last_seen: dict[tuple[int, int], int] = {}
    paused_ns = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 5:
            raise ValueError(f"{path}:{n}: expected 5 fields, got {len(f)}")
        t, node, node_type, ifindex, kind = (int(x) for x in f)
        counts["switch" if node_type == 1 else "host"]["pause" if kind == 1 else "resume"] += 1
        port = (node, ifindex)
        last_seen[port] = t
        if kind == 1:
            paused_since.setdefault(port, t)
        elif port in paused_since:
            paused_ns += t - paused_since.pop(port)
    paused_ns += sum(last_seen[p] - t0 for p, t0 in paused_since.items())
    return counts | {"ports_paused": len(last_seen), "paused_port_time_ns": paused_ns}


def read_flow_keys(path: Path) -> list[tuple[int, int, int, int]]:
    """(src, dst, sport, size) of every flow in an HPCC flow file."""
    lines = path.read_text().splitlines()
    count = int(lines[0].split()[0])
    next_port: dict[tuple[int, int], int] = {}
    keys = []
    for line in lines[1 : 1 + count]:
        src, dst, _pg, _dport, size = (int(x) for x in line.split()[:5])
        sport = next_port.get((src, dst), 10000)
        next_port[(src, dst)] = sport + 1
        keys.append((src, dst, sport, size))
    return keys


def summarize(fct: Path, pfc: Path | None = None, flows: Path | None = None) -> dict:
    rows = read_fct(fct)
    result: dict = {"fct_file": str(fct), "completed": len(rows)}
    if rows:
        result["first_start_ns"] = min(r.start_ns for r in rows)
        result["last_finish_ns"] = max(r.start_ns + r.fct_ns for r in rows)
    if flows is not None:
        keys = read_flow_keys(flows)
        done = {(r.src, r.dst, r.sport) for r in rows}
        missing = [k for k in keys if k[:3] not in done]
        result |= {
            "flows": len(keys),
            "incomplete": len(missing),
            "incomplete_bytes": sum(k[3] for k in missing),
            "incomplete_sizes": sorted(k[3] for k in missing)[-20:],
        }
    result["slowdown"] = slowdown_table(rows)
    if pfc is not None:
        result["pfc"] = pfc_summary(pfc)
    return result


def format_text(s: dict) -> str:
    lines = []
    if "flows" in s:
        lines.append(f"flows {s['flows']}, completed {s['completed']}, incomplete {s['incomplete']} ({s['incomplete_bytes']} B)")
    else:
        lines.append(f"completed {s['completed']}")
    if "last_finish_ns" in s:
        lines.append(f"first start {s['first_start_ns']} ns, last finish {s['last_finish_ns']} ns")
    lines.append(f"{'bucket':<10} {'count':>6} {'median':>7} {'p95':>7} {'p99':>7} {'mean':>7} {'mean_raw':>8} {'<1':>6}")
    for b in s["slowdown"]:
        if b["count"]:
            lines.append(
                f"{b['bucket']:<10} {b['count']:>6} {b['median']:>7.3f} {b['p95']:>7.3f} {b['p99']:>7.3f} {b['mean']:>7.3f} "
                f"{b['mean_unclamped']:>8.3f} {b['below_1']:>6.1%}"
            )
        else:
            lines.append(f"{b['bucket']:<10} {0:>6}")
    if "pfc" in s:
        p = s["pfc"]
        lines.append(
            f"PFC received: switches {p['switch']['pause']} PAUSE / {p['switch']['resume']} RESUME, "
            f"hosts {p['host']['pause']} PAUSE / {p['host']['resume']} RESUME; "
            f"{p['ports_paused']} ports, paused port-time {p['paused_port_time_ns'] / 1e3:.1f} us"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rundir", nargs="?", type=Path, help="a run directory of hpcc_run.py (fct.txt, pfc.txt, flows.txt)")
    ap.add_argument("--fct", type=Path)
    ap.add_argument("--pfc", type=Path)
    ap.add_argument("--flows", type=Path, help="the run's flow file, to count flows that never completed")
    ap.add_argument("--json", metavar="OUT", help="also write the summary as JSON to OUT ('-' for stdout, then no table)")
    args = ap.parse_args()
    if args.rundir is not None:
        args.fct = args.fct or args.rundir / "fct.txt"
        args.pfc = args.pfc or (args.rundir / "pfc.txt" if (args.rundir / "pfc.txt").exists() else None)
        args.flows = args.flows or (args.rundir / "flows.txt" if (args.rundir / "flows.txt").exists() else None)
    if args.fct is None:
        ap.error("give RUNDIR or --fct")
    s = summarize(args.fct, args.pfc, args.flows)
    if args.json == "-":
        json.dump(s, sys.stdout, indent=1)
        print()
        return 0
    print(format_text(s))
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
