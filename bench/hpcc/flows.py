#!/usr/bin/env python3
"""Write a flow file in the HPCC simulator's format for a topology file's hosts.

Output: line 1 is the number of flows, then one line per flow,
`src dst 3 100 size_bytes start_seconds` (priority group 3, destination port
100), sorted by start time. Every host runs an independent Poisson arrival
process with mean gap = mean_size * 8 / (host_rate * load), starting at 2 s
(the simulator's traffic starts there) and ending at 2 s + duration; each flow
goes to a destination drawn uniformly from the other hosts and has a size
drawn from a flow-size CDF by linear interpolation between its points
(truncated to whole bytes, at least 1 byte). The mean used for the gap is the
mean of that interpolating sampler. These are the semantics of the HPCC
project's traffic_gen.py; the random stream is Python's `random.Random(seed)`,
so a seed gives the same file on every run.

The default CDF is the repository's web-search distribution
(crates/lbsim-workload/cdfs/websearch_bytes.txt, `bytes cdf` with the cdf as
a fraction); a CDF whose last value is 100 is read as percent.

    python3 bench/hpcc/flows.py --topo fat.txt --load 0.3 --duration-ms 10 --seed 1 --out ws30.txt
"""

import argparse
import bisect
import heapq
import math
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CDF = REPO / "crates" / "lbsim-workload" / "cdfs" / "websearch_bytes.txt"
BASE_NS = 2_000_000_000
RATE_UNITS = {"Gbps": 1e9, "Mbps": 1e6, "Kbps": 1e3, "bps": 1.0}


def parse_rate(text: str) -> float:
    """`100Gbps` -> 1e11 bit/s."""
    for unit, scale in RATE_UNITS.items():
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"link rate {text!r}: expected a number followed by Gbps, Mbps, Kbps or bps")


def read_topology(path: Path) -> tuple[list[int], dict[int, float]]:
    """Host ids (ascending) and each host's link rate in bit/s."""
    tokens = path.read_text().split("\n")
    n_nodes, n_switches, n_links = (int(x) for x in tokens[0].split())
    switches = {int(x) for x in tokens[1].split()}
    if len(switches) != n_switches:
        raise ValueError(f"{path}: line 2 lists {len(switches)} switch ids, line 1 says {n_switches}")
    hosts = [i for i in range(n_nodes) if i not in switches]
    rates: dict[int, float] = {}
    for line in tokens[2 : 2 + n_links]:
        a, b, rate = line.split()[:3]
        for node in (int(a), int(b)):
            if node not in switches:
                rates[node] = parse_rate(rate)
    missing = [h for h in hosts if h not in rates]
    if missing:
        raise ValueError(f"{path}: host {missing[0]} has no link")
    return hosts, rates


class SizeCdf:
    """Flow sizes sampled by linear interpolation between CDF points."""

    def __init__(self, path: Path):
        points = [tuple(float(x) for x in line.split()) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
        scale = 100.0 if points[-1][1] == 100.0 else 1.0
        self.sizes = [p[0] for p in points]
        self.probs = [p[1] / scale for p in points]
        if self.probs[0] != 0.0 or self.probs[-1] != 1.0:
            raise ValueError(f"{path}: the cdf must run from 0 to 1 (or 0 to 100)")
        for i in range(1, len(points)):
            if self.probs[i] <= self.probs[i - 1] or self.sizes[i] <= self.sizes[i - 1]:
                raise ValueError(f"{path}: line {i + 1} does not increase in both size and cdf")

    def mean(self) -> float:
        """Mean of the interpolating sampler (trapezoids)."""
        return sum((self.sizes[i] + self.sizes[i - 1]) / 2 * (self.probs[i] - self.probs[i - 1]) for i in range(1, len(self.sizes)))

    def sample(self, u: float) -> int:
        """Size for a uniform draw u in [0, 1): the first point whose cdf is >= u, interpolated."""
        i = max(1, bisect.bisect_left(self.probs, u))
        x0, x1, y0, y1 = self.sizes[i - 1], self.sizes[i], self.probs[i - 1], self.probs[i]
        return max(1, int(x0 + (x1 - x0) * (u - y0) / (y1 - y0)))


def generate(hosts: list[int], rate_bps: float, load: float, duration_ns: int, cdf: SizeCdf, seed: int) -> list[tuple[int, int, int, int]]:
    """(start_ns, src, dst, size) for every flow, in start order (ties by source id)."""
    rng = random.Random(seed)
    mean_gap_ns = cdf.mean() * 8 / (rate_bps * load) * 1e9
    end_ns = BASE_NS + duration_ns

    def gap() -> int:
        return int(-math.log(1.0 - rng.random()) * mean_gap_ns)

    heap = [(BASE_NS + gap(), src) for src in hosts]
    heapq.heapify(heap)
    flows = []
    while heap:
        t, src = heap[0]
        if t > end_ns:
            heapq.heappop(heap)
            continue
        dst = src
        while dst == src:
            dst = hosts[rng.randrange(len(hosts))]
        flows.append((t, src, dst, cdf.sample(rng.random())))
        heapq.heapreplace(heap, (t + gap(), src))
    return flows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topo", type=Path, required=True, help="HPCC topology file; every node not listed as a switch is a host")
    ap.add_argument("--load", type=float, required=True, help="offered load per host as a fraction of its link rate, e.g. 0.3")
    ap.add_argument("--duration-ms", type=float, required=True, help="arrivals in [2 s, 2 s + duration]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cdf", type=Path, default=DEFAULT_CDF, help="flow-size CDF, `bytes cdf` per line (default: web search)")
    ap.add_argument("--bw", type=float, help="host link rate in Gb/s (default: from the topology; all hosts must agree)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if not 0 < args.load <= 1:
        ap.error(f"--load {args.load}: must be in (0, 1]")
    hosts, rates = read_topology(args.topo)
    if args.bw is not None:
        rate = args.bw * 1e9
    else:
        distinct = sorted(set(rates.values()))
        if len(distinct) != 1:
            ap.error(f"hosts have different link rates {distinct}: give --bw")
        rate = distinct[0]
    cdf = SizeCdf(args.cdf)
    flows = generate(hosts, rate, args.load, int(round(args.duration_ms * 1e6)), cdf, args.seed)
    with open(args.out, "w") as f:
        f.write(f"{len(flows)}\n")
        for t, src, dst, size in flows:
            f.write(f"{src} {dst} 3 100 {size} {t // 1_000_000_000}.{t % 1_000_000_000:09d}\n")
    offered = sum(fl[3] for fl in flows) * 8 / (args.duration_ms * 1e-3) / (rate * len(hosts))
    print(
        f"{args.out}: {len(flows)} flows, {len(hosts)} hosts at {rate / 1e9:g} Gb/s, mean size {cdf.mean():.0f} B (sampler), "
        f"load {args.load:g} (realised {offered:.3f}), seed {args.seed}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
